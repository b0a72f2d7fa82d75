/**
 * The Cedar authorization config (plugins/cedar-authz/config.ts, policies.ts): ToolHive's field
 * names and rules, policies parsed by Cedar with each problem at its policy and line:col inside
 * it (UTF-8 aware), the entity store, and ToolHive's file format with file positions.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { schemaIssueMessage } from '@gatehouse-mcp/gateway';
import { authzConfigSchema, fileSettings, inlineSettings, parseAuthzFile } from '../../plugins/cedar-authz/config.ts';
import { checkPolicies, lineColumnAt, parseEntities } from '../../plugins/cedar-authz/policies.ts';

/** `path: message` of each problem of `value`, or [] when it is valid. */
function problems(value: unknown): string[] {
  const result = authzConfigSchema.safeParse(value, { error: schemaIssueMessage });
  return result.success ? [] : result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
}

const inline = (policies: unknown, more: Record<string, unknown> = {}) => ({ type: 'inline', inline: { policies }, ...more });

describe('authzConfig (ToolHive AuthzConfigRef)', () => {
  it('an inline config with ToolHive defaults', () => {
    const config = authzConfigSchema.parse(inline(['permit(principal, action == Action::"call_tool", resource == Tool::"weather");']));
    const settings = inlineSettings(config, 'vmcp');
    assert.deepEqual(settings, {
      policies: ['permit(principal, action == Action::"call_tool", resource == Tool::"weather");'],
      entitiesJson: '[]',
      groupClaimName: '',
      roleClaimName: '',
      groupEntityType: 'THVGroup',
      multiValuedClaims: [],
      serverName: 'vmcp',
    });
  });

  it('the block of the type is required, others refused (type defaults to configMap, as in ToolHive)', () => {
    assert.deepEqual(problems({ inline: { policies: ['permit(principal, action, resource);'] } }).sort(), [
      'configMap: is required when type is configMap: {name, key: authz.json}',
      'inline: must not be set when type is configMap',
    ]);
    assert.deepEqual(problems({ type: 'configMap', configMap: { name: 'authz' } }), []);
    assert.equal(authzConfigSchema.parse({ type: 'configMap', configMap: { name: 'authz' } }).configMap?.key, 'authz.json');
    assert.deepEqual(problems({ type: 'file', file: { path: 'authz.yaml' } }), []);
    assert.deepEqual(problems({ type: 'opa' })[0], 'type: must be one of "inline", "configMap", "file" (got "opa")');
  });

  it('unknown fields are problems; primaryUpstreamProvider is refused with the reason', () => {
    assert.match(problems({ ...inline(['permit(principal, action, resource);']), groupClaimNames: 'groups' }).join('\n'), /unknown field "groupClaimNames" \(did you mean "groupClaimName"\?\)/);
    assert.match(problems({ type: 'inline', inline: { policies: ['permit(principal, action, resource);'], primaryUpstreamProvider: 'github' } }).join('\n'), /inline.primaryUpstreamProvider: is not supported yet/);
  });

  it('no policy is a problem', () => {
    assert.deepEqual(problems(inline([])), ['inline.policies: must list at least one policy: with none, every request is denied']);
  });

  it('each wrong policy is refused at its index, with line and column inside it', () => {
    const found = problems(inline([
      'permit(principal, action == Action::"call_tool", resource == Tool::"weather");',
      'permit(principal, acton, resource);',
      '// a comment with é and 日本\npermit(principal, action, resource) when { context.x = 1 };',
    ]));
    assert.equal(found.length, 2);
    assert.match(found[0]!, /^inline\.policies\.1: line 1 col 19: found an invalid variable in the policy scope: acton \(policy scopes must contain/);
    assert.match(found[1]!, /^inline\.policies\.2: line 2 col \d+: /);
  });

  it("ToolHive's example `resource in Tool::[...]` and two policies in one string are refused", () => {
    const found = checkPolicies([
      'permit(principal, action == Action::"call_tool", resource in Tool::["calculator", "translator"]);',
      'permit(principal, action, resource); forbid(principal, action, resource);',
    ]);
    assert.deepEqual(found.map((p) => p.index), [0, 1]);
    assert.equal(found[1]!.line, 1);
    assert.equal(found[1]!.column, 38, 'at the second policy');
  });

  it('groupEntityType is a Cedar identifier without a namespace', () => {
    assert.deepEqual(problems(inline(['permit(principal, action, resource);'], { groupEntityType: 'Team' })), []);
    assert.match(problems(inline(['permit(principal, action, resource);'], { groupEntityType: 'Platform::Group' }))[0]!, /must not contain "::"/);
    assert.match(problems(inline(['permit(principal, action, resource);'], { groupEntityType: 'if' }))[0]!, /must be a Cedar identifier/);
    assert.match(problems(inline(['permit(principal, action, resource);'], { groupEntityType: '1x' }))[0]!, /must be a Cedar identifier/);
  });

  it('entitiesJson: JSON, a list, entities Cedar accepts; attrs and parents may be left out (as cedar-go allows)', () => {
    const at = (entitiesJson: string) => problems({ type: 'inline', inline: { policies: ['permit(principal, action, resource);'], entitiesJson } });
    assert.deepEqual(at('[{"uid": {"type": "THVGroup", "id": "eng"}}]'), []);
    assert.match(at('{')[0]!, /^inline\.entitiesJson: is not JSON/);
    assert.match(at('{"uid": 1}')[0]!, /must be a JSON list of entities/);
    assert.match(at('[{"uid": "Tool::weather", "attrs": {}, "parents": []}]')[0]!, /expected a literal entity reference/, "ToolHive's docs example");
    const parsed = parseEntities('[{"uid": {"type": "THVGroup", "id": "eng"}}]');
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.entities, [{ uid: { type: 'THVGroup', id: 'eng' }, attrs: {}, parents: [] }]);
  });
});

describe('line and column of a UTF-8 byte offset', () => {
  it('counts characters, not bytes, and lines from 1', () => {
    assert.deepEqual(lineColumnAt('abc', 0), { line: 1, column: 1 });
    assert.deepEqual(lineColumnAt('ab\ncd', 4), { line: 2, column: 2 });
    assert.deepEqual(lineColumnAt('é日x', Buffer.byteLength('é日')), { line: 1, column: 3 });
    assert.deepEqual(lineColumnAt('😀\n😀x', Buffer.byteLength('😀\n😀')), { line: 2, column: 2 });
  });
});

describe("ToolHive's authorization file (version, type: cedarv1, cedar.*)", () => {
  const good = JSON.stringify({
    version: '1.0',
    type: 'cedarv1',
    cedar: { policies: ['permit(principal, action, resource);'], entities_json: '[]', group_claim_name: 'groups', role_claim_name: 'roles', group_entity_type: 'Team', multi_valued_claims: ['scp'] },
  });

  it('a JSON file is read; the config\'s claim mapping wins over the file\'s', () => {
    const result = parseAuthzFile(good, 'authz.json');
    assert.ok(result.ok);
    const config = authzConfigSchema.parse({ type: 'file', file: { path: 'authz.json' }, groupClaimName: 'teams' });
    const settings = fileSettings(config, result.config, 'srv');
    assert.equal(settings.groupClaimName, 'teams');
    assert.equal(settings.roleClaimName, 'roles');
    assert.equal(settings.groupEntityType, 'Team');
    assert.deepEqual(settings.multiValuedClaims, ['scp']);
  });

  it('a YAML file with a wrong policy: the file position of the policy, its path, and line:col inside it', () => {
    const text = ['version: "1.0"', 'type: cedarv1', 'cedar:', '  policies:', '    - permit(principal, action, resource);', '    - permit(principal, acton, resource);', ''].join('\n');
    const result = parseAuthzFile(text, 'authz.yaml');
    assert.ok(!result.ok);
    assert.equal(result.problems.length, 1);
    const [problem] = result.problems;
    assert.deepEqual({ line: problem!.line, column: problem!.column, path: problem!.path }, { line: 6, column: 7, path: 'cedar.policies[1]' });
    assert.match(problem!.message, /^line 1 col 19: found an invalid variable/);
  });

  it('httpv1 and a missing cedar block are refused; an empty file says what it needs', () => {
    const result = parseAuthzFile('{"version": "1.0", "type": "httpv1"}', 'authz.json');
    assert.ok(!result.ok);
    assert.deepEqual(result.problems.map((p) => `${p.path}: ${p.message}`).sort(), [
      'cedar: is required',
      'type: must be "cedarv1": Gatehouse decides with Cedar only (ToolHive\'s httpv1, an external decision point, is not supported)',
    ]);
    const empty = parseAuthzFile('', 'authz.yaml');
    assert.ok(!empty.ok);
    assert.match(empty.problems[0]!.message, /the file is empty/);
  });
});
