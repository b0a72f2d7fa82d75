import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_AGGREGATION, type AggregationConfig } from '../../core/config/aggregation-config.ts';
import { buildNameTable, type Named } from '../../core/mcp/aggregate/naming.ts';

const lists = new Map<string, Named[]>([
  ['github', [{ name: 'create_pr' }, { name: 'search' }, { name: 'delete_repo' }]],
  ['jira', [{ name: 'create_issue' }, { name: 'search' }]],
  ['docs', [{ name: 'search' }, { name: 'read' }]],
]);

function names(config: Partial<AggregationConfig>): { exposed: string[]; table: ReturnType<typeof buildNameTable<Named>> } {
  const table = buildNameTable(lists, { ...DEFAULT_AGGREGATION, ...config }, true);
  return { exposed: table.items.map((i) => `${i.name}=${i.backend}/${i.original}`), table };
}

describe('name table', () => {
  it('prefix (default): every tool as <backend>_<name>', () => {
    const { exposed, table } = names({});
    assert.deepEqual(exposed, [
      'github_create_pr=github/create_pr', 'github_search=github/search', 'github_delete_repo=github/delete_repo',
      'jira_create_issue=jira/create_issue', 'jira_search=jira/search',
      'docs_search=docs/search', 'docs_read=docs/read',
    ]);
    assert.deepEqual(table.conflicts, []);
    assert.equal(table.byName.get('jira_search')?.original, 'search');
  });

  it('prefix with a custom format', () => {
    assert.ok(names({ prefixFormat: '{workload}.' }).exposed.includes('docs.read=docs/read'));
  });

  it('priority: unique names stay bare; a shared name stays bare for the first in priorityOrder, the others are prefixed', () => {
    const { exposed } = names({ conflictResolution: 'priority', priorityOrder: ['docs'] });
    assert.deepEqual(exposed.sort(), [
      'create_issue=jira/create_issue', 'create_pr=github/create_pr', 'delete_repo=github/delete_repo',
      'github_search=github/search', 'jira_search=jira/search', 'read=docs/read', 'search=docs/search',
    ]);
  });

  it('priority without an order: group order decides', () => {
    assert.ok(names({ conflictResolution: 'priority' }).exposed.includes('search=github/search'));
  });

  it('manual: a shared name without overrides is a conflict, and none of its tools is exposed', () => {
    const { exposed, table } = names({ conflictResolution: 'manual' });
    assert.ok(!exposed.some((e) => e.startsWith('search=')));
    assert.equal(table.conflicts.length, 1);
    assert.deepEqual(table.conflicts[0]!.backends, ['github', 'jira', 'docs']);
    assert.match(table.conflicts[0]!.reason, /needs an override/);
  });

  it('manual: overrides on all but one resolve the conflict', () => {
    const { exposed, table } = names({
      conflictResolution: 'manual',
      tools: {
        github: { filter: null, exclude: [], overrides: { search: { name: 'code_search', description: 'Search code' } } },
        jira: { filter: null, exclude: [], overrides: { search: { name: 'issue_search', description: null } } },
      },
    });
    assert.deepEqual(table.conflicts, []);
    assert.ok(exposed.includes('search=docs/search'));
    assert.ok(exposed.includes('code_search=github/search'));
    assert.equal(table.byName.get('code_search')?.item.description, 'Search code');
  });

  it('filter, exclude and overrides per backend; overrides are never prefixed', () => {
    const { exposed } = names({
      tools: {
        github: { filter: ['create_pr', 'delete_repo'], exclude: ['delete_repo'], overrides: { create_pr: { name: 'open_pull_request', description: null } } },
      },
    });
    assert.deepEqual(exposed.filter((e) => e.includes('=github/')), ['open_pull_request=github/create_pr']);
  });

  it('a prefixed or overridden name that lands on a name in use is reported, the first kept', () => {
    const { exposed, table } = names({
      tools: { jira: { filter: null, exclude: [], overrides: { create_issue: { name: 'github_search', description: null } } } },
    });
    assert.equal(exposed.filter((e) => e.startsWith('github_search=')).length, 1);
    assert.equal(table.conflicts.length, 1);
    assert.match(table.conflicts[0]!.reason, /would name both/);
  });
});
