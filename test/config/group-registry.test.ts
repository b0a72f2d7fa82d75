/**
 * `MCPGroup.spec.registry` (core/config/group-registry-schema.ts): the registry that feeds the
 * group. Defaults, the resolved settings (the token from its Secret, durations and sizes, what its
 * servers get as backends), a group whose servers all come from the registry, and every problem
 * at its YAML path and line. The file alone is checked: nothing connects to the registry.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatProblem } from '../../core/config/problems.ts';
import { validateVmcpText } from '../../core/config/vmcp-config.ts';

const FILE = '/tmp/fed.yaml';

function vmcp(registry: string | null, options: { server?: boolean; config?: string; documents?: string } = {}): string {
  const docs = [
    `apiVersion: gatehouse.dev/v1alpha1
kind: MCPGroup
metadata: {name: team}
spec:
  description: fed by the registry${registry === null ? '' : `\n  registry:\n${registry.replace(/^/gm, '    ')}`}`,
    ...(options.server === false ? [] : ['apiVersion: gatehouse.dev/v1alpha1\nkind: MCPServer\nmetadata: {name: local}\nspec: {url: "http://127.0.0.1:9100/mcp", groupRef: team}']),
    `apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: vmcp}
spec:
  config: {groupRef: team${options.config === undefined ? '' : `, ${options.config}`}}
  incomingAuth: {type: anonymous}`,
    ...(options.documents === undefined ? [] : [options.documents]),
  ];
  return `${docs.join('\n---\n')}\n`;
}

function problems(text: string): string[] {
  const result = validateVmcpText(text, FILE);
  assert.ok(!result.ok, 'the file should be refused');
  return result.problems.map(formatProblem);
}

test('defaults, and a group whose servers all come from the registry (no MCPServer)', () => {
  const result = validateVmcpText(vmcp('url: http://127.0.0.1:8080\nname: default', { server: false }), FILE);
  assert.ok(result.ok, JSON.stringify(!result.ok && result.problems));
  assert.deepEqual(result.config.backends, []);
  assert.deepEqual(result.config.registry, {
    where: 'MCPGroup/team spec.registry',
    url: 'http://127.0.0.1:8080',
    name: 'default',
    token: null,
    intervalMs: 30_000,
    timeoutMs: 30_000,
    maxResponseBytes: 4 * 1024 * 1024,
    maxServers: 500,
    backend: { timeoutMs: 30_000, answerTimeoutMs: 30_000, maxResponseBytes: 32 * 1024 * 1024 },
    endpoints: { where: 'MCPGroup/team spec.registry', allowPrivate: false, allowedCidrs: [] },
  });
});

test('every field, the token from its Secret, and what its servers get as backends from spec.config.operational', () => {
  const secret = 'apiVersion: v1\nkind: Secret\nmetadata: {name: reader}\nstringData: {token: "tok-123"}';
  const text = vmcp('url: https://registry.example.com/base\nname: team.tools_1\ntokenSecretRef: {name: reader, key: token}\nsyncPolicy: {interval: 1m30s}\ntimeout: 5s\nmaxResponseSize: 512Ki\nmaxServers: 50', {
    config: 'operational: {timeouts: {default: 12s}, maxBackendResponseSize: 1Mi}',
    documents: secret,
  });
  const result = validateVmcpText(text, FILE);
  assert.ok(result.ok, JSON.stringify(!result.ok && result.problems));
  const registry = result.config.registry!;
  assert.deepEqual(registry.token, { name: 'reader', key: 'token', value: 'tok-123' });
  assert.deepEqual([registry.url, registry.name, registry.intervalMs, registry.timeoutMs, registry.maxResponseBytes, registry.maxServers], ['https://registry.example.com/base', 'team.tools_1', 90_000, 5_000, 512 * 1024, 50]);
  assert.deepEqual(registry.backend, { timeoutMs: 30_000, answerTimeoutMs: 12_000, maxResponseBytes: 1024 * 1024 });
});

test('where its servers may be reached: allowPrivateEndpoint (ToolHive\'s name) and allowedEndpointCIDRs, as written', () => {
  const result = validateVmcpText(vmcp('url: http://127.0.0.1:8080\nname: default\nallowPrivateEndpoint: true\nallowedEndpointCIDRs: [127.0.0.0/8, "::1", 169.254.169.254/32, "fd00:1::/64"]'), FILE);
  assert.ok(result.ok, JSON.stringify(!result.ok && result.problems));
  assert.deepEqual(result.config.registry!.endpoints, {
    where: 'MCPGroup/team spec.registry',
    allowPrivate: true,
    allowedCidrs: ['127.0.0.0/8', '::1', '169.254.169.254/32', 'fd00:1::/64'],
  });
  assert.equal(result.config.backends[0]!.endpointPolicy, null, "the file's MCPServer: the operator wrote its URL");
  assert.deepEqual(problems(vmcp('url: http://127.0.0.1:8080\nname: default\nallowPrivateEndpoint: "yes"\nallowedEndpointCIDRs: [10.0.0.1/8, 10.0.0.0/40, localhost, "[::1]", fd00::/129]\nallowPrivateEndpoints: true')), [
    `${FILE}:9:27 MCPGroup/team spec.registry.allowPrivateEndpoint: must be true or false (got "yes")`,
    `${FILE}:10:28 MCPGroup/team spec.registry.allowedEndpointCIDRs[0]: must be a CIDR range such as 10.1.0.0/16 or fd00:1::/64, or one address: 10.0.0.1/8 has bits set past its /8 prefix: write the range's first address (10.0.0.0/8)`,
    `${FILE}:10:40 MCPGroup/team spec.registry.allowedEndpointCIDRs[1]: must be a CIDR range such as 10.1.0.0/16 or fd00:1::/64, or one address: the prefix length "/40" is not a number from 0 to 32`,
    `${FILE}:10:53 MCPGroup/team spec.registry.allowedEndpointCIDRs[2]: must be a CIDR range such as 10.1.0.0/16 or fd00:1::/64, or one address: "localhost" is not an IPv4 or IPv6 address`,
    `${FILE}:10:64 MCPGroup/team spec.registry.allowedEndpointCIDRs[3]: must be a CIDR range such as 10.1.0.0/16 or fd00:1::/64, or one address: "[::1]" is not an IPv4 or IPv6 address`,
    `${FILE}:10:73 MCPGroup/team spec.registry.allowedEndpointCIDRs[4]: must be a CIDR range such as 10.1.0.0/16 or fd00:1::/64, or one address: the prefix length "/129" is not a number from 0 to 128`,
    `${FILE}:11:5 MCPGroup/team spec.registry: unknown field "allowPrivateEndpoints" (did you mean "allowPrivateEndpoint"?)`,
  ]);
});

test('a group without a registry is served as before (no registry, the MCPServer is still required)', () => {
  const result = validateVmcpText(vmcp(null), FILE);
  assert.ok(result.ok);
  assert.equal(result.config.registry, null);
  assert.deepEqual(problems(vmcp(null, { server: false })), [
    `${FILE}:11:22 VirtualMCPServer/vmcp spec.config.groupRef: MCPGroup "team" has no MCPServer: add an MCPServer with spec.groupRef: team, or let a registry feed the group (MCPGroup spec.registry)`,
  ]);
});

test('each problem at its YAML path and line', () => {
  const text = vmcp(
    [
      'url: ftp://registry.example.com',
      'name: "de fault"',
      'tokenSecretRef: {name: missing, key: token}',
      'syncPolicy: {interval: 50ms}',
      'timeout: soon',
      'maxResponseSize: 0',
      'maxServers: 100000',
      'pollInterval: 1m',
    ].join('\n'),
  );
  assert.deepEqual(problems(text), [
    `${FILE}:7:10 MCPGroup/team spec.registry.url: must be an absolute http(s) URL such as https://registry.example.com (got "ftp://registry.example.com")`,
    `${FILE}:8:11 MCPGroup/team spec.registry.name: must be a registry's name: letters, digits, ".", "_" and "-", at most 128 characters (got "de fault")`,
    `${FILE}:9:5 MCPGroup/team spec.registry.tokenSecretRef: Secret "missing" not found (no Secret in this file)`,
    `${FILE}:10:28 MCPGroup/team spec.registry.syncPolicy.interval: must be at least 100ms`,
    `${FILE}:11:14 MCPGroup/team spec.registry.timeout: "soon" is not a duration: use a number with a unit (ms, s, m or h), for example 500ms, 45s, 10m, 1h, 168h or 1h30m`,
    `${FILE}:12:22 MCPGroup/team spec.registry.maxResponseSize: 0 is not a size: use an integer number of bytes, or an integer with Ki, Mi or Gi (for example 512Ki, 4Mi, 1Gi)`,
    `${FILE}:13:17 MCPGroup/team spec.registry.maxServers: must be at most 10000 (got 100000)`,
    `${FILE}:14:5 MCPGroup/team spec.registry: unknown field "pollInterval"`,
  ]);
});

test('url: no credentials (not echoed), no query or fragment; url and name are required; the token must be one header value', () => {
  assert.deepEqual(problems(vmcp('url: https://reader:s3cret@registry.example.com\nname: default')), [
    `${FILE}:7:10 MCPGroup/team spec.registry.url: must not carry a user name or password: put the token in a Secret and name it in tokenSecretRef`,
  ]);
  assert.deepEqual(problems(vmcp('url: https://registry.example.com/?x=1\nname: default')), [
    `${FILE}:7:10 MCPGroup/team spec.registry.url: must not have a query or a fragment: it is the registry server's base URL, such as https://registry.example.com (got "https://registry.example.com/?x=1")`,
  ]);
  const missing = problems(vmcp('syncPolicy: {interval: 1m}'));
  assert.equal(missing.length, 2);
  assert.match(missing[0]!, /^\/tmp\/fed\.yaml:6:\d+ MCPGroup\/team spec\.registry\.url: /);
  assert.match(missing[1]!, /^\/tmp\/fed\.yaml:6:\d+ MCPGroup\/team spec\.registry\.name: /);
  const crlf = 'apiVersion: v1\nkind: Secret\nmetadata: {name: reader}\nstringData: {token: "tok\\r\\nX-Injected: 1"}';
  const refused = problems(vmcp('url: https://registry.example.com\nname: default\ntokenSecretRef: {name: reader, key: token}', { documents: crlf }));
  assert.equal(refused.length, 1);
  assert.match(refused[0]!, /spec\.registry\.tokenSecretRef: Secret "reader" key "token": holds CR, LF or NUL/);
  assert.doesNotMatch(refused[0]!, /tok-|Injected/, 'the secret value is not echoed');
});
