/**
 * The claims filter's view (plugins/registry-authz/gateway-filter.ts), called as the gateway will
 * call it: Contexts with a principal, the items of merged lists. Backend claims from the MCPServer
 * annotation, item claims from the aggregation config; string and array claims, a missing claim,
 * claims held as numbers or booleans; templates by their backend only; the key (what of the
 * caller the answer depends on: equal for callers holding the same configured pairs, whatever
 * else their tokens say, and cached per claims object); a malformed annotation refused at
 * create; anonymous incoming auth: no view, one warning naming where claims are configured.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { backendInfo, NO_ITEM_CLAIMS, type ItemClaims } from '../../core/plugin-api/backend.ts';
import { Principal, type Context } from '../../core/plugin-api/context.ts';
import { PluginConfigError } from '../../core/plugin-api/plugin-loader.ts';
import type { Plugin, PluginHost } from '../../core/plugin-api/plugin.ts';
import type { View, ViewItem } from '../../core/plugin-api/view.ts';
import { createLogger } from '../../core/observe/log.ts';
import { claimsConfigured, claimsConfiguredAt, claimsFilter } from '../../plugins/registry-authz/gateway-filter.ts';
import { captureLog } from '../store/helpers/log.ts';

const CLAIMS = 'toolhive.stacklok.dev/authz-claims';

function backend(name: string, annotation: string | null, authzClaims: Partial<ItemClaims> = {}) {
  return backendInfo(name, `http://127.0.0.1:9100/${name}`, 1000, null, {}, undefined, annotation === null ? {} : { [CLAIMS]: annotation }, { ...NO_ITEM_CLAIMS, ...authzClaims });
}

/** github: team platform; jira: no backend claims, one tool for managers; docs: a team among several. */
const BACKENDS = [
  backend('github', '{"team": "platform"}', {
    tools: { delete_repo: { role: 'admin' } },
    prompts: { release_notes: { role: 'writer' } },
    resources: { 'repo://secrets': { role: 'admin' } },
  }),
  backend('jira', null, { tools: { approve: { level: 'manager', org: 'acme' } } }),
  backend('docs', '{"org": "acme"}'),
];

function hostFor(backends = BACKENDS, log = createLogger('silent')): PluginHost {
  return { log, metrics: undefined as never, mcpPath: '/mcp', backends, configDir: '.', origin: {}, setAuthChallenge: () => {} };
}

async function viewOf(backends = BACKENDS): Promise<View> {
  const plugin = await claimsFilter.create({ anonymous: false, where: 'VirtualMCPServer/vmcp' }, hostFor(backends));
  assert.ok(plugin.view, 'the filter has a view');
  assert.equal(plugin.view.admit, undefined, 'claims decide on the item, never on the arguments');
  return plugin.view;
}

function ctxOf(claims: Record<string, unknown> | null): Context {
  return { principal: claims === null ? null : new Principal('alice', claims, null) } as unknown as Context;
}

function item(kind: ViewItem['kind'], backendName: string, original: string, name = kind === 'tools' || kind === 'prompts' ? `${backendName}_${original}` : original): ViewItem {
  return { kind, backend: backendName, name, original, item: {} };
}

const ITEMS: ViewItem[] = [
  item('tools', 'github', 'create_pr'),
  item('tools', 'github', 'delete_repo'),
  item('prompts', 'github', 'release_notes'),
  item('resources', 'github', 'repo://readme'),
  item('resources', 'github', 'repo://secrets'),
  item('resourceTemplates', 'github', 'repo://{path}'),
  item('tools', 'jira', 'search'),
  item('tools', 'jira', 'approve'),
  item('tools', 'docs', 'read'),
];

/** The names of ITEMS the caller sees. */
async function seen(view: View, claims: Record<string, unknown> | null, items = ITEMS): Promise<string[]> {
  const answer = await view.visible(ctxOf(claims), items);
  assert.equal(answer.length, items.length);
  return items.filter((_, i) => answer[i] === true).map((it) => `${it.kind}:${it.name}`);
}

describe('claims filter: what a caller sees', () => {
  it('backend claims from the annotation: a caller outside them sees none of the backend, templates included', async () => {
    const view = await viewOf();
    assert.deepEqual(await seen(view, { team: 'data' }), ['tools:jira_search']);
    assert.deepEqual(await seen(view, { team: 'platform' }), [
      'tools:github_create_pr',
      'resources:repo://readme',
      'resourceTemplates:repo://{path}',
      'tools:jira_search',
    ]);
  });

  it('item claims on top of the backend\'s: tools and prompts by the backend\'s own name, resources by URI', async () => {
    const view = await viewOf();
    assert.deepEqual(await seen(view, { team: 'platform', role: 'admin' }), [
      'tools:github_create_pr',
      'tools:github_delete_repo',
      'resources:repo://readme',
      'resources:repo://secrets',
      'resourceTemplates:repo://{path}',
      'tools:jira_search',
    ]);
    assert.deepEqual(await seen(view, { team: 'platform', role: 'writer' }), [
      'tools:github_create_pr',
      'prompts:github_release_notes',
      'resources:repo://readme',
      'resourceTemplates:repo://{path}',
      'tools:jira_search',
    ]);
    // The client's name does not matter (a prefix, an override): the backend's own does.
    const renamed = [item('tools', 'github', 'delete_repo', 'nuke'), item('tools', 'github', 'create_pr', 'delete_repo')];
    assert.deepEqual(await seen(view, { team: 'platform' }, renamed), ['tools:delete_repo']);
  });

  it('item claims alone, on a backend without claims: every pair must be held', async () => {
    const view = await viewOf();
    const approve = [item('tools', 'jira', 'approve')];
    assert.deepEqual(await seen(view, { level: 'manager', org: 'acme' }, approve), ['tools:jira_approve']);
    assert.deepEqual(await seen(view, { level: 'manager' }, approve), [], 'one claim missing');
    assert.deepEqual(await seen(view, { level: 'manager', org: 'other' }, approve), [], 'one claim with another value');
  });

  it('array claims hold each of their elements; other elements and empty arrays hold nothing', async () => {
    const view = await viewOf();
    const github = [item('tools', 'github', 'create_pr'), item('tools', 'github', 'delete_repo')];
    assert.deepEqual(await seen(view, { team: ['data', 'platform'], role: ['viewer', 'admin'] }, github), ['tools:github_create_pr', 'tools:github_delete_repo']);
    assert.deepEqual(await seen(view, { team: ['data'], role: ['admin'] }, github), []);
    assert.deepEqual(await seen(view, { team: [] }, github), []);
    assert.deepEqual(await seen(view, { team: [['platform']] }, github), [], 'a nested array is not its elements');
  });

  it('a claim held as a number, a boolean, null or an object never matches its string', async () => {
    const numbers = [backend('n', '{"level": "3", "admin": "true", "x": "null"}')];
    const view = await viewOf(numbers);
    const one = [item('tools', 'n', 'run')];
    assert.deepEqual(await seen(view, { level: '3', admin: 'true', x: 'null' }, one), ['tools:n_run']);
    assert.deepEqual(await seen(view, { level: 3, admin: 'true', x: 'null' }, one), []);
    assert.deepEqual(await seen(view, { level: '3', admin: true, x: 'null' }, one), []);
    assert.deepEqual(await seen(view, { level: '3', admin: 'true', x: null }, one), []);
    assert.deepEqual(await seen(view, { level: { value: '3' }, admin: 'true', x: 'null' }, one), []);
    assert.deepEqual(await seen(view, { level: [3], admin: 'true', x: 'null' }, one), []);
  });

  it('no principal, or no claims: only what has no claims', async () => {
    const view = await viewOf();
    assert.deepEqual(await seen(view, null), ['tools:jira_search']);
    assert.deepEqual(await seen(view, {}), ['tools:jira_search']);
  });

  it('inherited properties are not claims: a caller\'s "constructor" or "toString" holds nothing', async () => {
    const view = await viewOf([backend('p', '{"constructor": "x", "__proto__": "y"}')]);
    const one = [item('tools', 'p', 'run')];
    assert.deepEqual(await seen(view, {}, one), []);
    assert.deepEqual(await seen(view, JSON.parse('{"constructor": "x", "__proto__": "y"}') as Record<string, unknown>, one), ['tools:p_run']);
  });

  it('an item of a backend the configuration does not know is hidden, and so is that backend', async () => {
    const view = await viewOf();
    assert.deepEqual(await seen(view, { team: 'platform', org: 'acme' }, [item('tools', 'elsewhere', 'x')]), []);
    assert.equal(view.knowsBackend!(ctxOf({ team: 'platform' }), 'elsewhere'), false);
  });

  it('knowsBackend: whether the caller holds the backend\'s claims (item claims do not matter)', async () => {
    const view = await viewOf();
    assert.equal(view.knowsBackend!(ctxOf({ team: 'platform' }), 'github'), true);
    assert.equal(view.knowsBackend!(ctxOf({ team: 'data' }), 'github'), false);
    assert.equal(view.knowsBackend!(ctxOf(null), 'jira'), true);
    assert.equal(view.knowsBackend!(ctxOf(null), 'docs'), false);
    assert.equal(view.knowsBackend!(ctxOf({ org: ['x', 'acme'] }), 'docs'), true);
  });

  it('an item map named like an Object.prototype member is only a name', async () => {
    const view = await viewOf([backend('b', null, { tools: { constructor: { role: 'admin' } } })]);
    assert.deepEqual(await seen(view, {}, [item('tools', 'b', 'constructor'), item('tools', 'b', 'toString')]), ['tools:b_toString']);
  });
});

describe('claims filter: the key', () => {
  it('is null when no claims are configured at all (an annotation of {} and empty item maps included)', async () => {
    const view = await viewOf([backend('a', null), backend('b', '{}', { tools: {} })]);
    assert.equal(view.key(ctxOf({ team: 'platform' })), null);
    assert.deepEqual(await seen(view, null, [item('tools', 'a', 'x'), item('tools', 'b', 'y')]), ['tools:a_x', 'tools:b_y']);
  });

  it('is equal for callers holding the same configured pairs, whatever else their tokens hold', async () => {
    const view = await viewOf();
    const key = (claims: Record<string, unknown> | null) => view.key(ctxOf(claims));
    const platform = key({ sub: 'alice', team: 'platform', email: 'a@example.com', exp: 1, groups: ['x'] });
    assert.equal(key({ sub: 'bob', team: 'platform', iat: 7 }), platform, 'other claims, and claims nobody configured, do not count');
    assert.equal(key({ team: ['platform'] }), platform, 'a string and an array holding it are the same');
    assert.equal(key({ team: ['platform', 'platform', 'sales'] }), platform, 'values nobody configured do not count');
    assert.equal(key({ team: 'sales' }), key({ team: 'marketing' }), 'two values that no claim names: the same view');
    assert.equal(key({ team: 'sales' }), key(null), 'and the same as no principal');
    assert.equal(key({ team: 3 }), key({}), 'a number holds nothing');
  });

  it('differs when the callers differ in a configured pair', async () => {
    const view = await viewOf();
    const key = (claims: Record<string, unknown>) => view.key(ctxOf(claims));
    const keys = [
      key({}),
      key({ team: 'platform' }),
      key({ team: 'platform', role: 'admin' }),
      key({ team: 'platform', role: 'writer' }),
      key({ team: 'platform', role: ['admin', 'writer'] }),
      key({ org: 'acme' }),
      key({ org: 'acme', level: 'manager' }),
    ];
    assert.equal(new Set(keys).size, keys.length, keys.join(' '));
    for (const k of keys) assert.match(k!, /^[A-Za-z0-9_-]{12}\.[0-9a-f]+$/);
  });

  it('depends on the configuration, not only on the caller: another rule set gives other keys', async () => {
    const a = await viewOf([backend('x', '{"team": "platform"}')]);
    const b = await viewOf([backend('x', null, { tools: { run: { team: 'platform' } } })]);
    const ctx = ctxOf({ team: 'platform' });
    assert.notEqual(a.key(ctx), b.key(ctx));
    assert.equal(a.key(ctx), (await viewOf([backend('x', '{"team": "platform"}')])).key(ctx), 'the same rules, the same key');
  });

  it('is computed once per claims object (the verified token\'s, shared by its requests)', async () => {
    const view = await viewOf();
    let reads = 0;
    const claims = new Proxy({ team: 'platform' } as Record<string, unknown>, {
      get(target, property, receiver) {
        reads++;
        return Reflect.get(target, property, receiver);
      },
    });
    const first = view.key(ctxOf(claims));
    const readsOnce = reads;
    assert.ok(readsOnce > 0);
    for (let i = 0; i < 100; i++) assert.equal(view.key({ principal: new Principal('alice', claims, null) } as unknown as Context), first);
    assert.equal(reads, readsOnce, 'later requests of the same token reuse the key');
  });

  it('decides the answer: callers with one key see the same items (property, random tokens)', async () => {
    const view = await viewOf();
    const value = fc.oneof(
      fc.constantFrom('platform', 'data', 'admin', 'writer', 'manager', 'acme', 'other'),
      fc.array(fc.constantFrom('platform', 'data', 'admin', 'writer', 'manager', 'acme'), { maxLength: 3 }),
      fc.integer(),
      fc.boolean(),
    );
    const token = fc.dictionary(fc.constantFrom('team', 'role', 'level', 'org', 'sub', 'groups'), value);
    await fc.assert(
      fc.asyncProperty(token, token, async (a, b) => {
        if (view.key(ctxOf(a)) !== view.key(ctxOf(b))) return;
        assert.deepEqual(await seen(view, a), await seen(view, b));
      }),
      { numRuns: 500 },
    );
  });
});

describe('claims filter: start-up', () => {
  it('a malformed annotation is refused at create, naming the MCPServer and the annotation (never taken for no claims)', async () => {
    const bad = [backend('github', '{"team": 7}'), backend('jira', 'not json'), backend('ok', '{"team": "x"}')];
    await assert.rejects(
      async () => claimsFilter.create({ anonymous: false, where: 'VirtualMCPServer/vmcp' }, hostFor(bad)),
      (err: unknown) => {
        assert.ok(err instanceof PluginConfigError);
        assert.deepEqual(err.message.split('\n'), [
          'MCPServer/github metadata.annotations: annotation toolhive.stacklok.dev/authz-claims is not a JSON object of strings: claim "team" is number 7',
          `MCPServer/jira metadata.annotations: annotation toolhive.stacklok.dev/authz-claims is not a JSON object of strings: ${jsonError('not json')}`,
        ]);
        return true;
      },
    );
    const disagree = backendInfo('d', 'http://127.0.0.1:9/mcp', 1000, null, {}, undefined, { [CLAIMS]: '{"a": "1"}', 'gatehouse.dev/authz-claims': '{"a": "2"}' });
    await assert.rejects(async () => claimsFilter.create({ anonymous: true, where: 'VirtualMCPServer/vmcp' }, hostFor([disagree])), /annotations toolhive\.stacklok\.dev\/authz-claims and gatehouse\.dev\/authz-claims disagree/);
  });

  it('the annotation is read under gatehouse.dev/ too', async () => {
    const view = await viewOf([backendInfo('g', 'http://127.0.0.1:9/mcp', 1000, null, {}, undefined, { 'gatehouse.dev/authz-claims': '{"team": "a"}' })]);
    assert.deepEqual(await seen(view, { team: 'b' }, [item('tools', 'g', 'x')]), []);
    assert.deepEqual(await seen(view, { team: 'a' }, [item('tools', 'g', 'x')]), ['tools:g_x']);
  });

  it('anonymous incoming auth: no view (nothing filtered), and one warning at start naming where claims are configured', async () => {
    const captured = captureLog('info');
    const plugin: Plugin = await claimsFilter.create({ anonymous: true, where: 'VirtualMCPServer/vmcp' }, hostFor(BACKENDS, captured.log));
    assert.equal(plugin.view, undefined);
    assert.deepEqual(captured.lines(), [], 'nothing logged before start');
    await plugin.start?.();
    const warnings = captured.lines().filter((line) => line.level === 40);
    assert.equal(warnings.length, 1);
    assert.deepEqual(warnings[0]!.claimsConfiguredAt, [
      'MCPServer/github metadata.annotations["toolhive.stacklok.dev/authz-claims"]',
      'VirtualMCPServer/vmcp spec.config.aggregation.tools[workload github].authzClaims',
      'VirtualMCPServer/vmcp spec.config.aggregation.tools[workload jira].authzClaims',
      'MCPServer/docs metadata.annotations["toolhive.stacklok.dev/authz-claims"]',
    ]);
    assert.match(String(warnings[0]!.msg), /^incomingAuth\.type is anonymous: .* not enforced .*: MCPServer\/github metadata\.annotations\["toolhive\.stacklok\.dev\/authz-claims"\]; /);
  });

  it('claimsConfigured: an annotation with claims, a malformed one (to be refused), or an item map with claims', () => {
    assert.equal(claimsConfigured([backend('a', null), backend('b', '{}'), backend('c', '  ')]), false);
    assert.equal(claimsConfigured([backend('a', '{"team": "x"}')]), true);
    assert.equal(claimsConfigured([backend('a', '{"team": 1}')]), true);
    assert.equal(claimsConfigured([backend('a', null, { resources: { 'file:///x': { team: 'x' } } })]), true);
    assert.equal(claimsConfigured([backend('a', null, { prompts: { p: {} } })]), false);
    assert.deepEqual(claimsConfiguredAt([backend('a', null, { prompts: { p: { team: 'x' } } })], 'VirtualMCPServer/v'), ['VirtualMCPServer/v spec.config.aggregation.tools[workload a].authzClaims']);
  });
});

/** JSON.parse's own message for `text` (it differs between Node versions). */
function jsonError(text: string): string {
  try {
    JSON.parse(text);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected a JSON error');
}
