/**
 * `spec.incomingAuth.authzConfig` (core/config/authz-schema.ts, checked by Cedar through
 * plugins/cedar-authz/checks.ts, as `gatehouse vmcp validate` does): ToolHive's field names and
 * rules, and every problem of the policies at the file, line and column of the offending text,
 * whatever the YAML style of the policy (block, folded, quoted, plain), in a policy file (YAML or
 * JSON) and inside a ConfigMap's value. Unknown entity types and actions are refused there.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { formatProblem, type ConfigProblem } from '../../core/config/problems.ts';
import { validateVmcpText } from '../../core/config/vmcp-config.ts';
import { cedarPolicyChecks } from '../../plugins/cedar-authz/checks.ts';
import { checkPolicies, lineColumnAt, parseEntities } from '../../plugins/cedar-authz/policies.ts';
import { GROUP_WITH_ECHO } from '../helpers/gateway.ts';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-authz-'));
const FILE = join(dir, 'vmcp.yaml');

/** A VirtualMCPServer whose incomingAuth ends with `authz` (indented under incomingAuth), and `extra` documents. */
function vmcp(authz: string, extra = '', incoming = 'type: anonymous'): string {
  return `${GROUP_WITH_ECHO}apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: vmcp}
spec:
  config: {groupRef: tools}
  incomingAuth:
    ${incoming}
    authzConfig:
${authz
  .split('\n')
  .map((line) => (line === '' ? line : `      ${line}`))
  .join('\n')}
${extra}`;
}

function validate(text: string, checks = true) {
  return validateVmcpText(text, FILE, checks ? { authzChecks: cedarPolicyChecks } : {});
}

/** The problems of `text`, each `line:col path: message`. */
function problems(text: string, checks = true): string[] {
  const result = validate(text, checks);
  return result.ok ? [] : result.problems.map((p) => formatProblem({ ...p, file: '' }).replace(/^:/, '').replace(' VirtualMCPServer/vmcp spec.incomingAuth.authzConfig.', ' '));
}

/** The character of `text` at a problem's line and column. */
function charAt(text: string, problem: ConfigProblem): string {
  return text.split('\n')[problem.line - 1]?.[problem.column - 1] ?? '';
}

function onlyProblem(text: string): ConfigProblem {
  const result = validate(text);
  assert.ok(!result.ok, 'the config is refused');
  assert.equal(result.problems.length, 1, result.problems.map((p) => formatProblem(p)).join('\n'));
  return result.problems[0]!;
}

const WEATHER = 'permit(principal, action == Action::"call_tool", resource == Tool::"weather");';

describe('authzConfig: ToolHive\'s AuthzConfigRef', () => {
  it('an inline config resolves with ToolHive\'s defaults', () => {
    const result = validate(vmcp(`type: inline\ninline:\n  policies:\n    - '${WEATHER}'`));
    assert.ok(result.ok, result.ok ? '' : JSON.stringify(result.problems));
    assert.deepEqual(result.config.authz, {
      policies: [WEATHER],
      entitiesJson: '[]',
      groupClaimName: '',
      roleClaimName: '',
      groupEntityType: 'THVGroup',
      multiValuedClaims: [],
      source: 'spec.incomingAuth.authzConfig.inline',
    });
    const without = validate(vmcp('').replace('    authzConfig:\n', ''));
    assert.ok(without.ok);
    assert.equal(without.config.authz, null);
  });

  it('the claim mapping: groupClaimName, roleClaimName, groupEntityType, multiValuedClaims (✚)', () => {
    const result = validate(vmcp(`type: inline\ninline: {policies: ['permit(principal in Team::"eng", action, resource);']}\ngroupClaimName: realm_access.roles\nroleClaimName: "https://example.com/roles"\ngroupEntityType: Team\nmultiValuedClaims: [scp]`));
    assert.ok(result.ok, result.ok ? '' : JSON.stringify(result.problems));
    assert.equal(result.config.authz?.groupClaimName, 'realm_access.roles');
    assert.equal(result.config.authz?.roleClaimName, 'https://example.com/roles');
    assert.equal(result.config.authz?.groupEntityType, 'Team');
    assert.deepEqual(result.config.authz?.multiValuedClaims, ['scp']);
  });

  it('the block of the type is required and no other (type defaults to configMap, as in ToolHive)', () => {
    const text = vmcp(`inline: {policies: ['${WEATHER}']}`);
    const found = problems(text);
    assert.deepEqual(found.map((p) => p.replace(/^\d+:\d+ /, '')), ['configMap: is required when type is configMap', 'inline: must not be set when type is configMap']);
    const lines = text.split('\n');
    assert.deepEqual(found.map((p) => lines[Number(p.split(':')[0]) - 1]!.trim()), ['authzConfig:', `inline: {policies: ['${WEATHER}']}`]);
    assert.match(problems(vmcp('type: opa'))[0]!, /type: must be one of "inline", "configMap", "file" \(got "opa"\)/);
  });

  it('unknown fields are refused with a did-you-mean; primaryUpstreamProvider is refused with the reason', () => {
    assert.match(problems(vmcp(`type: inline\ninline: {policies: ['${WEATHER}']}\ngroupClaimNames: groups`)).join('\n'), /unknown field "groupClaimNames" \(did you mean "groupClaimName"\?\)/);
    assert.match(problems(vmcp(`type: inline\ninline: {policies: ['${WEATHER}'], primaryUpstreamProvider: github}`)).join('\n'), /inline\.primaryUpstreamProvider: is not supported yet/);
  });

  it('no policy is a problem: every request would be denied', () => {
    const text = vmcp('type: inline\ninline: {policies: []}');
    const result = validate(text);
    assert.ok(!result.ok);
    assert.deepEqual(result.problems.map((p) => [p.path, p.message, charAt(text, p)]), [['spec.incomingAuth.authzConfig.inline.policies', 'must list at least one policy: with none, every request is denied', 'p']]);
  });

  it('anonymous incoming auth takes policies too: its callers are Client::"anonymous", as in ToolHive', () => {
    assert.ok(validate(vmcp(`type: inline\ninline: {policies: ['permit(principal == Client::"anonymous", action, resource);']}`)).ok);
  });

  it('without Cedar\'s checks the shapes are checked, not the Cedar text (the plugin parses it when it starts)', () => {
    const text = vmcp('type: inline\ninline: {policies: ["permit(principal, acton, resource);"]}');
    assert.deepEqual(problems(text, false), []);
    assert.equal(problems(text).length, 1);
  });
});

describe('a policy\'s problem is at its character in the file', () => {
  it('in a block literal (|), on the policy\'s second line', () => {
    const text = vmcp('type: inline\ninline:\n  policies:\n    - |\n      permit(\n        principal, acton, resource\n      );');
    const problem = onlyProblem(text);
    assert.equal(problem.path, 'spec.incomingAuth.authzConfig.inline.policies[0]');
    const line = text.split('\n')[problem.line - 1]!;
    assert.equal(line.trim(), 'principal, acton, resource', 'the policy\'s second line');
    assert.equal(line.slice(problem.column - 1, problem.column + 4), 'acton');
    assert.match(problem.message, /^found an invalid variable in the policy scope: acton/);
  });

  it('in a folded block (>-), a double-quoted string after an escape, a single-quoted one, a plain one', () => {
    // Cedar points at the `}` where an expression was expected.
    const cases: [string, string][] = [
      ['    - >-\n      permit(principal, action,\n      resource) when { context.x == 1 && };', '}'],
      ['    - "permit(principal, \\u0061ction == Action::\\"call_tool\\", resource) when { context.x == 1 && };"', '}'],
      ["    - 'permit(principal, action, resource) when { context.name == \"it''s\" && };'", '}'],
      ['    - permit(principal, action, resource) when { context.x == 1 && };', '}'],
    ];
    for (const [policy, expected] of cases) {
      const text = vmcp(`type: inline\ninline:\n  policies:\n${policy}`);
      const problem = onlyProblem(text);
      assert.equal(charAt(text, problem), expected, `${policy}: ${formatProblem(problem)}`);
    }
  });

  it('every policy is checked: each problem at its own policy', () => {
    const text = vmcp(`type: inline\ninline:\n  policies:\n    - '${WEATHER}'\n    - 'permit(principal, acton, resource);'\n    - 'permit(principal, action, resource); forbid(principal, action, resource);'`);
    const result = validate(text);
    assert.ok(!result.ok);
    assert.deepEqual(result.problems.map((p) => [p.path.replace(/.*\./, ''), charAt(text, p)]), [['policies[1]', 'a'], ['policies[2]', 'f']]);
  });

  it('entitiesJson: JSON, a list, entities Cedar accepts (attrs and parents may be left out, as cedar-go allows)', () => {
    const at = (entities: string) => problems(vmcp(`type: inline\ninline:\n  policies: ['${WEATHER}']\n  entitiesJson: '${entities}'`));
    assert.deepEqual(at('[{"uid": {"type": "THVGroup", "id": "eng"}}]'), []);
    assert.match(at('{')[0]!, /inline\.entitiesJson: is not JSON/);
    assert.match(at('{"uid": 1}')[0]!, /must be a JSON list of entities/);
    assert.match(at('[{"uid": "Tool::weather", "attrs": {}, "parents": []}]')[0]!, /expected a literal entity reference/, "ToolHive's docs example");
    const parsed = parseEntities('[{"uid": {"type": "THVGroup", "id": "eng"}}]');
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.entities, [{ uid: { type: 'THVGroup', id: 'eng' }, attrs: {}, parents: [] }]);
  });

  it('groupEntityType: no namespace (core), a Cedar identifier (Cedar)', () => {
    const at = (type: string) => problems(vmcp(`type: inline\ninline: {policies: ['permit(principal, action, resource);']}\ngroupEntityType: "${type}"`));
    assert.deepEqual(at('Team'), []);
    assert.match(at('Platform::Group')[0]!, /groupEntityType: must not contain "::"/);
    assert.match(at('if')[0]!, /groupEntityType: must be a Cedar identifier/);
    assert.match(at('1x')[0]!, /groupEntityType: must be a Cedar identifier/);
  });
});

describe('entity types and actions no request has are refused', () => {
  it('a misspelt action or type, at its place, with Cedar\'s did-you-mean', () => {
    const text = vmcp(`type: inline\ninline:\n  policies:\n    - 'forbid(principal, action == Action::"call_tools", resource);'\n    - 'permit(principal in THVGroop::"eng", action, resource) when { resource is Tol };'`);
    const result = validate(text);
    assert.ok(!result.ok);
    assert.deepEqual(
      result.problems.map((p) => [charAt(text, p), p.message.replace(/: no request has it.*/, '')]),
      [
        ['A', 'unrecognized action `Action::"call_tools"` (did you mean `Action::"call_tool"`?)'],
        ['T', 'unrecognized entity type `THVGroop` (did you mean `THVGroup`?)'],
        ['T', 'unrecognized entity type `Tol` (did you mean `Tool`?)'],
      ],
    );
  });

  it('ToolHive\'s vocabulary passes: its list actions and FeatureType, MCP, the group type, the entity store\'s types (namespaced too)', () => {
    const policies = [
      'permit(principal, action == Action::"list_tools", resource == FeatureType::"tool");',
      'permit(principal in THVRole::"dev", action in [Action::"call_tool", Action::"get_prompt", Action::"read_resource"], resource in MCP::"vmcp");',
      'permit(principal in Acme::Team::"a", action, resource) when { resource is Prompt };',
      'permit(principal == Client::"alice", action, resource) when { principal.claim_anything == context.arg_whatever };',
    ];
    const entities = JSON.stringify([{ uid: { type: 'THVGroup', id: 'eng' }, parents: [{ type: 'THVRole', id: 'dev' }] }, { uid: { type: 'Acme::Team', id: 'a' } }]);
    assert.deepEqual(problems(vmcp(`type: inline\ninline:\n  policies: ${JSON.stringify(policies)}\n  entitiesJson: '${entities}'`)), []);
  });
});

describe('type: file ✚ (ToolHive\'s authorization file)', () => {
  const fileConfig = (path: string, more = '') => vmcp(`type: file\nfile: {path: ${path}}${more}`);

  it('a YAML file: its problems at the file\'s own lines and columns', () => {
    const text = ['version: "1.0"', 'type: cedarv1', 'cedar:', '  policies:', `    - '${WEATHER}'`, '    - |', '      permit(principal,', '        acton, resource);', '  group_claim_name: groups', ''].join('\n');
    writeFileSync(join(dir, 'authz.yaml'), text);
    const result = validate(fileConfig('authz.yaml'));
    assert.ok(!result.ok);
    const [problem] = result.problems;
    assert.equal(result.problems.length, 1);
    assert.equal(resolve(problem!.file), join(dir, 'authz.yaml'), 'the policy file, as a path from the working directory when under it');
    assert.equal(problem!.path, 'cedar.policies[1]');
    assert.deepEqual([problem!.line, problem!.column], [8, 9]);
    assert.equal(charAt(text, problem!), 'a');
  });

  it('a JSON file (ToolHive\'s example format): the character inside the JSON string, escapes counted', () => {
    const text = JSON.stringify({ version: '1.0', type: 'cedarv1', cedar: { policies: [WEATHER, 'permit(principal, action == Action::"call_tool", resource == Tool::"x") when { context.y == 1 && };'], entities_json: '[]' } }, null, 2);
    writeFileSync(join(dir, 'authz.json'), text);
    const problem = onlyProblem(fileConfig('authz.json'));
    assert.equal(problem.path, 'cedar.policies[1]');
    assert.equal(charAt(text, problem), '}');
  });

  it('the VirtualMCPServer\'s claim mapping wins over the file\'s (as ToolHive\'s operator does for a ConfigMap)', () => {
    writeFileSync(join(dir, 'mapping.yaml'), `version: "1.0"\ntype: cedarv1\ncedar:\n  policies: ['${WEATHER}']\n  group_claim_name: groups\n  role_claim_name: roles\n  group_entity_type: Team\n  multi_valued_claims: [scp]\n`);
    const result = validate(fileConfig('mapping.yaml', '\ngroupClaimName: teams'));
    assert.ok(result.ok, result.ok ? '' : JSON.stringify(result.problems));
    const { groupClaimName, roleClaimName, groupEntityType, multiValuedClaims, source } = result.config.authz!;
    assert.deepEqual({ groupClaimName, roleClaimName, groupEntityType, multiValuedClaims }, { groupClaimName: 'teams', roleClaimName: 'roles', groupEntityType: 'Team', multiValuedClaims: ['scp'] });
    assert.equal(resolve(source), join(dir, 'mapping.yaml'));
  });

  it('a missing file, httpv1, a file too large are refused', () => {
    assert.match(problems(fileConfig('nope.yaml'))[0]!, /file\.path: .*nope\.yaml: file not found \(a relative path resolves against the directory of the config file\)/);
    writeFileSync(join(dir, 'http.json'), '{"version": "1.0", "type": "httpv1"}');
    const result = validate(fileConfig('http.json'));
    assert.ok(!result.ok);
    assert.deepEqual(result.problems.map((p) => `${p.path}: ${p.message}`).sort(), ['cedar: is required', 'type: must be "cedarv1": Gatehouse decides with Cedar only (ToolHive\'s httpv1, an external decision point, is not supported)']);
    writeFileSync(join(dir, 'big.yaml'), `# ${'x'.repeat(1024 * 1024)}\n`);
    assert.match(problems(fileConfig('big.yaml'))[0]!, /holds \d+ bytes: an authorization file may hold at most 1048576/);
  });
});

describe('type: configMap (a ConfigMap document of the file)', () => {
  const configMap = (content: string, name = 'authz') => `---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}}\ndata:\n  authz.json: |\n${content.split('\n').map((l) => `    ${l}`).join('\n')}\n`;

  it('its key holds ToolHive\'s file: read, and a problem at its character inside the ConfigMap\'s value', () => {
    const good = JSON.stringify({ version: '1.0', type: 'cedarv1', cedar: { policies: [WEATHER], entities_json: '[]' } }, null, 2);
    const ok = validate(vmcp('type: configMap\nconfigMap: {name: authz}', configMap(good)));
    assert.ok(ok.ok, ok.ok ? '' : JSON.stringify(ok.problems));
    assert.deepEqual(ok.config.authz?.policies, [WEATHER]);
    assert.equal(ok.config.authz?.source, 'ConfigMap/authz data["authz.json"]');

    const bad = JSON.stringify({ version: '1.0', type: 'cedarv1', cedar: { policies: [WEATHER, 'permit(principal, actin, resource);'] } }, null, 2);
    const text = vmcp('type: configMap\nconfigMap: {name: authz, key: authz.json}', configMap(bad));
    const problem = onlyProblem(text);
    assert.equal(problem.resource, 'ConfigMap/authz');
    assert.equal(problem.path, 'data["authz.json"]');
    assert.match(problem.message, /^cedar\.policies\[1\]: found an invalid variable in the policy scope: actin/);
    assert.equal(text.split('\n')[problem.line - 1]!.slice(problem.column - 1, problem.column + 4), 'actin');
  });

  it('a ConfigMap or a key that is not there', () => {
    assert.match(problems(vmcp('type: configMap\nconfigMap: {name: authz}', configMap('{}', 'other')))[0]!, /configMap\.name: ConfigMap "authz" not found \(ConfigMaps in this file: other\)/);
    assert.match(problems(vmcp('type: configMap\nconfigMap: {name: authz, key: policies.json}', configMap('{}')))[0]!, /configMap\.key: ConfigMap "authz" has no key "policies\.json" \(its keys: authz\.json\)/);
  });
});

describe('policies.ts', () => {
  it('line and column of a UTF-8 byte offset count characters, lines from 1', () => {
    assert.deepEqual(lineColumnAt('abc', 0), { line: 1, column: 1 });
    assert.deepEqual(lineColumnAt('ab\ncd', 4), { line: 2, column: 2 });
    assert.deepEqual(lineColumnAt('é日x', Buffer.byteLength('é日')), { line: 1, column: 3 });
    assert.deepEqual(lineColumnAt('😀\n😀x', Buffer.byteLength('😀\n😀')), { line: 2, column: 2 });
  });

  it("ToolHive's example `resource in Tool::[...]` and two policies in one string are refused, with UTF-16 offsets", () => {
    const found = checkPolicies([
      'permit(principal, action == Action::"call_tool", resource in Tool::["calculator", "translator"]);',
      'permit(principal, action, resource); forbid(principal, action, resource);',
      '// é日😀\npermit(principal, acton, resource);',
    ]);
    assert.deepEqual(found.map((p) => p.index), [0, 1, 2]);
    assert.deepEqual([found[1]!.line, found[1]!.column, found[1]!.offset], [1, 38, 37]);
    assert.equal(found[2]!.offset, '// é日😀\npermit(principal, '.length);
  });
});
