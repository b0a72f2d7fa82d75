/**
 * Claims in the vMCP configuration (core/config/authz-claims.ts): `aggregation.tools[].authzClaims`
 * resolved onto the backend (BackendConfig, BackendInfo), a change of it reloading the backend;
 * an entry with only claims keeps a one-backend group transparent; every mistake at its YAML path
 * and line, with the MCPServer's claims annotation checked at its own line; and validate's check
 * of the annotation and the plugin's parser (plugins/registry-authz/claims-annotation.ts) give
 * one verdict.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { claimsAnnotationProblem } from '../../core/config/authz-claims.ts';
import { validateVmcpFile } from '../../core/config/vmcp-config.ts';
import { changesOf, nothingChanged } from '../../core/vmcp/reload-diff.ts';
import { ClaimsAnnotationError, parseClaims } from '../../plugins/registry-authz/claims-annotation.ts';
import { writeConfig } from '../helpers/gateway.ts';
import { configOf, file, TWO } from './helpers/config-file.ts';

/** The problems as `line:col path: message` (no file, no resource), each with the text of its line. */
async function problemsOf(text: string): Promise<{ problem: string; line: string }[]> {
  const path = await writeConfig(text);
  const result = await validateVmcpFile(path);
  assert.equal(result.ok, false, 'expected problems');
  if (result.ok) return [];
  const lines = readFileSync(path, 'utf8').split('\n');
  return result.problems.map((p) => ({ problem: `${p.line}:${p.column} ${p.resource} ${p.path}: ${p.message}`, line: lines[p.line - 1]!.trim() }));
}

describe('authzClaims in the aggregation config', () => {
  it('is the backend\'s (BackendConfig.authzClaims), each map as written; other backends get empty maps', async () => {
    const config = await configOf(
      file(
        TWO,
        [
          '      tools:',
          '        - workload: github',
          '          filter: [create_pr, delete_repo]',
          '          authzClaims:',
          '            tools: {delete_repo: {role: admin, team: platform}}',
          '            prompts: {release: {role: writer}}',
          '            resources: {"repo://secrets": {role: admin}}',
        ].join('\n'),
      ),
    );
    const [github, jira] = config.backends;
    assert.deepEqual(github!.authzClaims, {
      tools: { delete_repo: { role: 'admin', team: 'platform' } },
      prompts: { release: { role: 'writer' } },
      resources: { 'repo://secrets': { role: 'admin' } },
    });
    assert.deepEqual(jira!.authzClaims, { tools: {}, prompts: {}, resources: {} });
    // The aggregation rules are unchanged by it.
    assert.deepEqual(config.aggregation.tools, { github: { filter: ['create_pr', 'delete_repo'], exclude: [], overrides: {} } });
  });

  it('an entry with only claims renames nothing: a group of one backend stays transparent', async () => {
    const config = await configOf(file([{ name: 'github' }], '      tools: [{workload: github, authzClaims: {tools: {delete_repo: {role: admin}}}}]'));
    assert.deepEqual(config.aggregation.tools, {});
    assert.deepEqual(config.backends[0]!.authzClaims.tools, { delete_repo: { role: 'admin' } });
  });

  it('a change of the claims reloads that backend (reload-diff), the same claims are no change', async () => {
    const at = (role: string) => configOf(file(TWO, `      tools: [{workload: github, authzClaims: {tools: {x: {role: ${role}}}}}]`));
    const before = await at('admin');
    assert.deepEqual(changesOf(before, await at('owner')).changed, ['github']);
    assert.ok(nothingChanged(changesOf(before, await at('admin'))));
  });

  it('refuses each mistake at its YAML path and line', async () => {
    const problems = await problemsOf(
      file(
        TWO,
        [
          '      tools:',
          '        - workload: github',
          '          filter: [create_pr, list_issues, search]',
          '          exclude: [search]',
          '          overrides: {create_pr: {name: gh_pr}}',
          '          authzClaims:',
          '            tools:',
          '              create_pr: {team: platform, level: 3, admin: true, groups: [a, b]}',
          '              list_isues: {team: x}',
          '              search: {team: x}',
          '              gh_pr: {team: x}',
          '              "": {team: x}',
          '            prompts:',
          '              review: {}',
          '              other: {"": x}',
          '            resources:',
          '              "file:///etc/x": {team: "a\\u0001"}',
          '            tool: {}',
          '        - workload: jira',
          '          authzClaims: {tools: {__proto__: {team: x}}}',
        ].join('\n'),
      ),
    );
    const where = 'VirtualMCPServer/vmcp spec.config.aggregation.tools[0].authzClaims';
    assert.deepEqual(problems, [
      { problem: `32:50 ${where}.tools.create_pr.level: must be a string (got 3): claims are compared as strings, and a token claim held as a number or boolean never matches`, line: 'create_pr: {team: platform, level: 3, admin: true, groups: [a, b]}' },
      { problem: `32:60 ${where}.tools.create_pr.admin: must be a string (got true): claims are compared as strings, and a token claim held as a number or boolean never matches`, line: 'create_pr: {team: platform, level: 3, admin: true, groups: [a, b]}' },
      { problem: `32:66 ${where}.tools.create_pr.groups: must be one string: a claim map requires one value per claim (a caller whose token claim is a list holds it when one element equals it)`, line: 'create_pr: {team: platform, level: 3, admin: true, groups: [a, b]}' },
      { problem: `33:15 ${where}.tools.list_isues: is not in this workload's filter (did you mean "list_issues"?), so it is never served and its claims restrict nothing: fix the name or remove its claims`, line: 'list_isues: {team: x}' },
      { problem: `34:15 ${where}.tools.search: is in this workload's exclude, so it is never served and its claims restrict nothing: remove its claims or the exclude`, line: 'search: {team: x}' },
      { problem: `35:15 ${where}.tools.gh_pr: is the name overrides give "create_pr": authzClaims names a tool by the backend's own name, "create_pr"`, line: 'gh_pr: {team: x}' },
      { problem: `36:15 ${where}.tools[""]: must not be empty: name the item by its backend's own name (a resource by its URI)`, line: '"": {team: x}' },
      { problem: `38:15 ${where}.prompts.review: names no claim: an item with no claims is seen by every caller, so write the claims a caller must hold, or remove the entry`, line: 'review: {}' },
      { problem: `39:23 ${where}.prompts.other[""]: claim names are 1 to 256 characters`, line: 'other: {"": x}' },
      { problem: `41:39 ${where}.resources["file:///etc/x"].team: claim "team" contains control characters`, line: '"file:///etc/x": {team: "a\\u0001"}' },
      { problem: `42:13 ${where}: unknown field "tool" (did you mean "tools"?)`, line: 'tool: {}' },
      {
        problem: '44:33 VirtualMCPServer/vmcp spec.config.aggregation.tools[1].authzClaims.tools.__proto__: "__proto__" cannot be configured here (it is not a name the gateway can keep apart)',
        line: 'authzClaims: {tools: {__proto__: {team: x}}}',
      },
    ]);
  });

  it('bounds a claim map: 64 claims, 256 characters a name or value', async () => {
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`c${i}`, 'v']));
    const long = 'x'.repeat(257);
    const problems = await problemsOf(file(TWO, `      tools: [{workload: github, authzClaims: {tools: {a: ${JSON.stringify(many)}, b: {team: "${long}"}, c: {"${long}": x}}}}]`));
    assert.deepEqual(
      problems.map((p) => p.problem.replace(/^\d+:\d+ VirtualMCPServer\/vmcp spec\.config\.aggregation\.tools\[0\]\.authzClaims\./, '')),
      ['tools.a: has 65 claims: at most 64', 'tools.b.team: the value of claim "team" is longer than 256 characters', `tools.c.${long}: claim names are 1 to 256 characters`],
    );
  });
});

describe("an MCPServer's claims annotation in validate", () => {
  const annotated = (lines: string) => file([{ name: 'github', annotations: lines }, { name: 'jira' }], '      pageSize: 0');

  it('a malformed one is a problem at its line, under its own path; both names must agree', async () => {
    const problems = await problemsOf(annotated("    toolhive.stacklok.dev/authz-claims: '{\"team\": 7}'"));
    assert.deepEqual(problems, [
      {
        problem: '10:41 MCPServer/github metadata.annotations["toolhive.stacklok.dev/authz-claims"]: is not a JSON object of strings: claim "team" is number 7',
        line: 'toolhive.stacklok.dev/authz-claims: \'{"team": 7}\'',
      },
    ]);
    const disagree = await problemsOf(annotated("    toolhive.stacklok.dev/authz-claims: '{\"team\": \"a\"}'\n    gatehouse.dev/authz-claims: '{\"team\": \"b\"}'"));
    assert.deepEqual(disagree.map((p) => p.problem), ['11:33 MCPServer/github metadata.annotations["gatehouse.dev/authz-claims"]: disagrees with annotation toolhive.stacklok.dev/authz-claims: set one of them']);
    const notJson = await problemsOf(annotated('    gatehouse.dev/authz-claims: "team=platform"'));
    assert.match(notJson[0]!.problem, /^10:33 MCPServer\/github metadata\.annotations\["gatehouse\.dev\/authz-claims"\]: is not a JSON object of strings: /);
    // Other annotations are the operator's own; the same claims under both names are fine.
    await configOf(annotated("    example.com/owner: \"{not json\"\n    toolhive.stacklok.dev/authz-claims: '{\"team\": \"a\"}'\n    gatehouse.dev/authz-claims: '{\"team\": \"a\"}'"));
  });

  it("validate's check and the plugin's parser give one verdict on every case", () => {
    const cases = [
      '',
      '   ',
      '{}',
      '{"team": "platform"}',
      '{"team": "platform", "env": "prod"}',
      '{"__proto__": "x"}',
      '{"team": 7}',
      '{"team": true}',
      '{"team": null}',
      '{"team": ["a"]}',
      '{"team": {"a": "b"}}',
      '["team"]',
      '"team"',
      '7',
      'null',
      'team=platform',
      '{"team": "platform",}',
      '{"": "x"}',
      `{"${'k'.repeat(256)}": "x"}`,
      `{"${'k'.repeat(257)}": "x"}`,
      `{"team": "${'v'.repeat(256)}"}`,
      `{"team": "${'v'.repeat(257)}"}`,
      '{"team": "a\\u0000"}',
      '{"te\\nam": "a"}',
      '{"team": "a\\u007f"}',
      JSON.stringify(Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`c${i}`, 'v']))),
      JSON.stringify(Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`c${i}`, 'v']))),
    ];
    for (const text of cases) {
      let parserSays: string | null = null;
      try {
        parseClaims(text);
      } catch (err) {
        assert.ok(err instanceof ClaimsAnnotationError);
        parserSays = err.message.replace(/^annotation toolhive\.stacklok\.dev\/authz-claims /, '');
      }
      assert.equal(claimsAnnotationProblem(text), parserSays, `case ${JSON.stringify(text)}`);
    }
  });
});
