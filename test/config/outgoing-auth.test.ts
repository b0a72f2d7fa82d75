/**
 * Where each backend's outgoing credentials come from (source discovered or inline, the default
 * for the rest, both spellings of the reference type), the static strategies, and the problems
 * of a strategy that could put something unsafe on the backend's wire, each named by YAML path.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatProblem } from '../../core/config/problems.ts';
import { validateVmcpText } from '../../core/config/vmcp-config.ts';
import type { VmcpConfig } from '../../core/config/vmcp-types.ts';

const SERVERS = `apiVersion: gatehouse.dev/v1alpha1
kind: MCPGroup
metadata: {name: tools}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPServer
metadata: {name: alpha}
spec: {url: "http://127.0.0.1:9100/mcp", groupRef: tools, externalAuthConfigRef: {name: alpha-key}}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPServer
metadata: {name: beta}
spec: {url: "http://127.0.0.1:9200/mcp", groupRef: tools}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPServer
metadata: {name: gamma}
spec: {url: "http://127.0.0.1:9300/mcp", groupRef: tools}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {key: "k-123", token: "t-456", sts: "sts-secret", newline: "abc\\n", spaced: " abc"}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPExternalAuthConfig
metadata: {name: alpha-key}
spec: {type: headerInjection, headerInjection: {headerName: X-API-Key, valueSecretRef: {name: creds, key: key}}}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPExternalAuthConfig
metadata: {name: shared-bearer}
spec: {type: bearerToken, bearerToken: {tokenSecretRef: {name: creds, key: token}}}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPExternalAuthConfig
metadata: {name: none}
spec: {type: unauthenticated}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPExternalAuthConfig
metadata: {name: exchange}
spec:
  type: tokenExchange
  tokenExchange:
    tokenUrl: https://sts.example.com/token
    clientId: gatehouse
    clientSecretRef: {name: creds, key: sts}
    audience: docs-api
    scopes: [docs.read]
    subjectTokenType: jwt
    externalTokenHeaderName: X-Upstream-Token
    timeout: 3s
---
`;

const OIDC = '{type: oidc, resourceUrl: "https://mcp.example.com/mcp", oidcConfig: {type: inline, inline: {issuer: "https://idp.example.com", clientId: gatehouse, audience: "https://mcp.example.com/mcp"}}}';

function vmcp(outgoingAuth: string, incomingAuth = OIDC): string {
  return `${SERVERS}apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: vmcp}
spec:
  config: {groupRef: tools}
  incomingAuth: ${incomingAuth}
  outgoingAuth: ${outgoingAuth}
`;
}

function configOf(text: string): VmcpConfig {
  const result = validateVmcpText(text, '/tmp/outgoing.yaml');
  assert.ok(result.ok, result.ok ? '' : result.problems.map(formatProblem).join('\n'));
  return result.config;
}

function problemsOf(text: string): string[] {
  const result = validateVmcpText(text, '/tmp/outgoing.yaml');
  assert.ok(!result.ok, 'the config should be invalid');
  return result.problems.map((problem) => formatProblem(problem).replace(/^\/tmp\/outgoing\.yaml:\d+:\d+ /, ''));
}

const strategies = (config: VmcpConfig): Record<string, string | null> => Object.fromEntries(config.backends.map((b) => [b.name, b.externalAuth?.name ?? null]));

test('discovered: each MCPServer\'s own reference; the default for the others', () => {
  assert.deepEqual(strategies(configOf(vmcp('{source: discovered}'))), { alpha: 'alpha-key', beta: null, gamma: null });
  const config = configOf(vmcp('{source: discovered, default: {type: external_auth_config_ref, externalAuthConfigRef: {name: shared-bearer}}}'));
  assert.deepEqual(strategies(config), { alpha: 'alpha-key', beta: 'shared-bearer', gamma: 'shared-bearer' });
  assert.deepEqual(config.backends[0]?.externalAuth, { name: 'alpha-key', type: 'headerInjection', headerName: 'x-api-key', value: { name: 'creds', key: 'key', value: 'k-123' } });
  assert.deepEqual(config.backends[1]?.externalAuth, { name: 'shared-bearer', type: 'bearerToken', token: { name: 'creds', key: 'token', value: 't-456' } });
});

test('inline: the listed backends (either spelling of the type), the default for the rest; an explicit none', () => {
  const config = configOf(
    vmcp(`
    source: inline
    backends:
      beta: {type: externalAuthConfigRef, externalAuthConfigRef: {name: exchange}}
      gamma: {type: external_auth_config_ref, externalAuthConfigRef: {name: none}}
    default: {externalAuthConfigRef: {name: shared-bearer}}
    tokenExchangeCache: {maxEntries: 500, defaultLifetime: 20s, expirySkew: 5s}`),
  );
  // alpha's own reference does not count with source inline.
  assert.deepEqual(strategies(config), { alpha: 'shared-bearer', beta: 'exchange', gamma: 'none' });
  assert.deepEqual(config.backends[2]?.externalAuth, { name: 'none', type: 'unauthenticated' });
  assert.deepEqual(config.backends[1]?.externalAuth, {
    name: 'exchange',
    type: 'tokenExchange',
    tokenUrl: 'https://sts.example.com/token',
    clientId: 'gatehouse',
    clientSecret: { name: 'creds', key: 'sts', value: 'sts-secret' },
    audience: 'docs-api',
    scopes: ['docs.read'],
    subjectProviderName: null,
    subjectTokenType: 'urn:ietf:params:oauth:token-type:jwt',
    externalTokenHeaderName: 'x-upstream-token',
    timeoutMs: 3_000,
  });
  assert.deepEqual(config.tokenExchangeCache, { maxEntries: 500, defaultLifetimeMs: 20_000, expirySkewMs: 5_000 });
});

test('a credential header the gateway sets itself, a header name that is no token, a value that cannot be one header', () => {
  const text = vmcp('{source: discovered}')
    .replace('headerName: X-API-Key', 'headerName: Mcp-Session-Id')
    .replace('tokenSecretRef: {name: creds, key: token}', 'tokenSecretRef: {name: creds, key: newline}')
    .replace('externalTokenHeaderName: X-Upstream-Token', 'externalTokenHeaderName: "X Token"')
    .replace('kind: MCPExternalAuthConfig\nmetadata: {name: none}\nspec: {type: unauthenticated}', 'kind: MCPExternalAuthConfig\nmetadata: {name: none}\nspec: {type: headerInjection, headerInjection: {headerName: X-Key, valueSecretRef: {name: creds, key: spaced}}}');
  assert.deepEqual(problemsOf(text), [
    'MCPExternalAuthConfig/alpha-key spec.headerInjection.headerName: "Mcp-Session-Id" is a header the gateway reserves (framing, proxying, the MCP session): choose another header for the credential',
    'MCPExternalAuthConfig/shared-bearer spec.bearerToken.tokenSecretRef: Secret "creds" key "newline": holds CR, LF or NUL, which cannot travel in a header (a trailing newline from `echo` is a common cause)',
    'MCPExternalAuthConfig/none spec.headerInjection.valueSecretRef: Secret "creds" key "spaced": begins or ends with whitespace, which HTTP drops from a header value',
    'MCPExternalAuthConfig/exchange spec.tokenExchange.externalTokenHeaderName: must be an HTTP header name (letters, digits and !#$%&\'*+-.^_`|~), got "X Token"',
  ]);
});

test('a strategy\'s block must match its type; an unknown type names the ones there are', () => {
  const text = vmcp('{source: discovered}').replace('spec: {type: unauthenticated}', 'spec: {type: unauthenticated, bearerToken: {tokenSecretRef: {name: creds, key: token}}}').replace('type: bearerToken, bearerToken', 'type: bearer, bearerToken');
  const problems = problemsOf(text);
  assert.equal(problems.length, 2, problems.join('\n'));
  assert.match(problems[0]!, /^MCPExternalAuthConfig\/shared-bearer spec\.type: .*upstreamInject.*tokenExchange.*headerInjection.*bearerToken.*unauthenticated/);
  assert.equal(problems[1], 'MCPExternalAuthConfig/none spec.bearerToken: must not be set when type is unauthenticated');
});

test('a default that names no MCPExternalAuthConfig', () => {
  assert.deepEqual(problemsOf(vmcp('{default: {externalAuthConfigRef: {name: shared-baerer}}}')), [
    'VirtualMCPServer/vmcp spec.outgoingAuth.default.externalAuthConfigRef.name: MCPExternalAuthConfig "shared-baerer" not found (did you mean "shared-bearer"?) (MCPExternalAuthConfigs in this file: alpha-key, shared-bearer, none, exchange)',
  ]);
});

test('a token exchange of the caller\'s token behind anonymous incoming auth has no subject', () => {
  assert.deepEqual(problemsOf(vmcp('{source: discovered}', '{type: anonymous}')), [
    "MCPExternalAuthConfig/exchange spec.tokenExchange: has no subject token: it exchanges the caller's token, but the VirtualMCPServer's incomingAuth is anonymous (use incomingAuth oidc, or subjectProviderName with the embedded authorization server)",
  ]);
});

test('a token URL over plain http to another host, or carrying a password (never echoed); proxy and Mcp-* headers for a credential', () => {
  for (const [url, expected] of [
    ['http://sts.example.com/token', 'must use https: plain http is allowed only for loopback hosts (localhost, 127.0.0.0/8, ::1) (got "http://sts.example.com/token")'],
    ['https://gatehouse:s3cret@sts.example.com/token', 'must not carry a user name or password: client credentials belong in a Secret (clientSecretRef)'],
  ] as const) {
    const problems = problemsOf(vmcp('{source: discovered}').replace('tokenUrl: https://sts.example.com/token', `tokenUrl: "${url}"`));
    assert.deepEqual(problems, [`MCPExternalAuthConfig/exchange spec.tokenExchange.tokenUrl: ${expected}`]);
    assert.ok(!problems.join('').includes('s3cret'));
  }
  for (const name of ['Proxy-Authorization', 'Mcp-Method', 'Expect']) {
    const problems = problemsOf(vmcp('{source: discovered}').replace('headerName: X-API-Key', `headerName: ${name}`));
    assert.match(problems[0] ?? '', new RegExp(`spec\\.headerInjection\\.headerName: "${name}" is a header the gateway reserves`));
  }
});
