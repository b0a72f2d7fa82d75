/**
 * Valid vMCP configs resolve to the expected `VmcpConfig`, defaults included.
 */
import { DEFAULT_AUTH_SERVER_RATE_LIMITS } from '../../core/config/auth-server-limits.ts';
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadVmcpConfig, validateVmcpText } from '../../core/config/vmcp-config.ts';
import type { VmcpConfig } from '../../core/config/vmcp-types.ts';
import { GROUP_WITH_ECHO } from '../helpers/gateway.ts';
import { backendInfo } from '../../core/plugin-api/backend.ts';
import { changesOf, nothingChanged } from '../../core/vmcp/reload-diff.ts';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');

/** The config of YAML text that must be valid (relative paths resolve against the fixtures). */
function configOf(text: string): VmcpConfig {
  const result = validateVmcpText(text, join(fixtures, 'inline.yaml'));
  assert.ok(result.ok, result.ok ? '' : JSON.stringify(result.problems, null, 2));
  return result.config;
}

test('the minimal file resolves, with every default', async () => {
  const config = await loadVmcpConfig(join(fixtures, 'minimal.yaml'));
  assert.deepEqual(config, {
    file: join(fixtures, 'minimal.yaml'),
    dir: fixtures,
    name: 'vmcp',
    groupRef: 'tools',
    backends: [{ name: 'echo', url: 'http://127.0.0.1:9100/mcp', transport: { kind: 'streamable-http' }, timeoutMs: 30_000, answerTimeoutMs: 30_000, maxResponseBytes: 32 * 1024 * 1024, externalAuth: null, annotations: {}, authzClaims: { tools: {}, prompts: {}, resources: {} }, endpointPolicy: null }],
    registry: null,
    incomingAuth: { type: 'anonymous', resourceUrl: 'http://127.0.0.1:4483/mcp' },
    authz: null,
    outgoingAuthSource: 'discovered',
    tokenExchangeCache: { maxEntries: 10_000, defaultLifetimeMs: 60_000, expirySkewMs: 30_000 },
    authServer: null,
    aggregation: { conflictResolution: 'prefix', prefixFormat: '{workload}_', priorityOrder: [], tools: {}, pageSize: 0 },
    session: { ttlMs: 30 * 60_000, maxSessions: 10_000, maxSessionsPerPrincipal: 100, maxSessionBytes: 64 * 1024, maxSessionsBytesPerPrincipal: 1024 * 1024, storage: { type: 'memory' } },
    failureHandling: { partialFailureMode: 'bestEffort', healthCheckIntervalMs: 30_000, unhealthyThreshold: 3 },
    rateLimiting: null,
    server: { maxBodyBytes: 4 * 1024 * 1024, allowedHosts: [], allowedOrigins: [], shutdownGraceMs: 10_000, requestTimeoutMs: 60_000, accessLog: false, engine: 'gatehouse', admin: null, trustedProxies: [], limits: { maxConnections: 10_000, maxPipelinedRequests: 16, maxSessionRequests: 64, maxStreamBuffer: 4 * 1024 * 1024, sendTimeoutMs: 60_000 }, workers: 1 },
    telemetry: { endpoint: null, serviceName: null, insecure: false, tracingEnabled: false, metricsEnabled: false, samplingRate: 0.05, headers: {}, trustClientTraceContext: false },
    audit: { enabled: false, component: null, eventTypes: [], excludeEventTypes: [], includeRequestData: false, maxDataSize: 1024, output: { kind: 'stdout' } },
    passthroughHeaders: [],
    plugins: [],
  });
});

test('the rich file resolves every field', async () => {
  const config = await loadVmcpConfig(join(fixtures, 'rich.yaml'));
  assert.equal(config.name, 'vmcp');
  assert.deepEqual(config.incomingAuth, {
    type: 'oidc',
    resourceUrl: 'https://mcp.example.com/mcp',
    oidc: {
      type: 'inline',
      issuer: 'https://auth.example.com',
      clientId: 'vmcp',
      audience: 'https://mcp.example.com/mcp',
      clientSecret: { name: 'oidc-client', key: 'clientSecret', value: 's3cr3t' },
      jwksAllowPrivateIP: true,
    },
  });

  // outgoingAuth.source inline: only the listed backends get a strategy.
  assert.equal(config.outgoingAuthSource, 'inline');
  assert.deepEqual(
    config.backends.map((backend) => [backend.name, backend.url, backend.timeoutMs, backend.externalAuth?.type ?? null]),
    [
      ['github', 'https://github-mcp.example.com/mcp', 90_000, 'upstreamInject'],
      ['docs', 'http://127.0.0.1:9200/mcp', 30_000, 'tokenExchange'],
      ['fetch', 'http://127.0.0.1:9300/mcp', 30_000, null],
    ],
  );
  assert.deepEqual(config.backends[0]?.externalAuth, { name: 'github-inject', type: 'upstreamInject', providerName: 'github' });
  assert.deepEqual(config.backends[1]?.externalAuth, {
    name: 'docs-exchange',
    type: 'tokenExchange',
    tokenUrl: 'https://sts.example.com/token',
    clientId: 'gatehouse',
    clientSecret: { name: 'auth-keys', key: 'exchange', value: 'exchange-secret' },
    audience: 'docs-api',
    scopes: ['docs.read', 'docs.write'],
    subjectProviderName: 'google',
    subjectTokenType: 'urn:ietf:params:oauth:token-type:access_token',
    externalTokenHeaderName: null,
    timeoutMs: 10_000,
  });

  const authServer = config.authServer;
  assert.ok(authServer !== null);
  assert.equal(authServer.issuer, 'https://auth.example.com');
  assert.equal(authServer.displayName, 'Acme Docs');
  assert.equal(authServer.authorizationEndpointBaseUrl, 'https://login.example.com');
  // `data` values are base64-decoded (a P-256 key in PKCS#8 PEM).
  assert.equal(authServer.signingKeys.length, 1);
  assert.match(authServer.signingKeys[0]!.value, /^-----BEGIN PRIVATE KEY-----\n[^]+\n-----END PRIVATE KEY-----\n$/);
  assert.deepEqual(authServer.hmacSecrets, [{ name: 'auth-keys', key: 'hmac', value: '0123456789abcdef0123456789abcdef' }]);
  assert.deepEqual(authServer.tokenLifespans, { accessTokenMs: 30 * 60_000, refreshTokenMs: 720 * 3_600_000, authCodeMs: 5 * 60_000 });
  assert.deepEqual(authServer.upstreamProviders, [
    {
      name: 'github',
      type: 'oauth2',
      authorizationEndpoint: 'https://github.com/login/oauth/authorize',
      tokenEndpoint: 'https://github.com/login/oauth/access_token',
      clientId: 'gh-client',
      clientSecret: { name: 'auth-keys', key: 'github', value: 'gh-secret' },
      scopes: ['read:user', 'repo'],
      userInfo: {
        endpointUrl: 'https://api.github.com/user',
        httpMethod: 'GET',
        additionalHeaders: { Accept: 'application/vnd.github+json' },
        fieldMapping: { subjectFields: ['id'], nameFields: ['name', 'login'], emailFields: ['email'] },
      },
      tokenResponseMapping: {
        accessTokenPath: 'data.access_token',
        scopePath: 'data.scope',
        refreshTokenPath: 'data.refresh_token',
        expiresInPath: 'data.expires_in',
      },
    },
    {
      name: 'google',
      type: 'oidc',
      issuerUrl: 'https://accounts.google.com',
      clientId: 'google-client',
      clientSecret: { name: 'auth-keys', key: 'google', value: 'google-secret' },
      scopes: ['openid', 'email'],
    },
  ]);
  // A Secret written with its fields under `spec` works too.
  assert.deepEqual(authServer.storage, {
    type: 'redis',
    sentinel: {
      masterName: 'gatehouse-master',
      addresses: ['sentinel-0.redis:26379', 'sentinel-1.redis:26379'],
      password: { name: 'redis', key: 'sentinel', value: 'sentinel-pass' },
    },
    address: null,
    username: { name: 'redis', key: 'username', value: 'gatehouse' },
    password: { name: 'redis', key: 'password', value: 'redis-pass' },
    db: 2,
    keyPrefix: 'gh:',
  });
  // Budgets: what the file sets, the rest at their defaults.
  assert.deepEqual(authServer.rateLimiting, {
    ...DEFAULT_AUTH_SERVER_RATE_LIMITS,
    token: { perKey: { maxTokens: 50, refillPeriodMs: 30_000 }, shared: DEFAULT_AUTH_SERVER_RATE_LIMITS.token.shared },
    registration: { perKey: DEFAULT_AUTH_SERVER_RATE_LIMITS.registration.perKey, shared: { maxTokens: 100, refillPeriodMs: 3_600_000 } },
  });
  assert.deepEqual([authServer.maxClients, authServer.maxPendingLogins, authServer.maxPendingLoginsPerAddress], [5000, 2000, 20]);

  assert.deepEqual(config.aggregation, { conflictResolution: 'prefix', prefixFormat: '{workload}_', priorityOrder: [], tools: {}, pageSize: 0 });
  assert.deepEqual(config.session, { ttlMs: 30 * 60_000, maxSessions: 10_000, maxSessionsPerPrincipal: 100, maxSessionBytes: 64 * 1024, maxSessionsBytesPerPrincipal: 1024 * 1024, storage: { type: 'memory' } });
  assert.deepEqual(config.server, {
    maxBodyBytes: 512 * 1024,
    allowedHosts: ['mcp.example.com', 'mcp.internal:8443'],
    allowedOrigins: ['https://app.example.com', 'http://localhost:3000'],
    shutdownGraceMs: 45_000,
    requestTimeoutMs: 120_000,
    accessLog: true,
    engine: 'gatehouse',
    admin: { host: '127.0.0.1', port: 9464 },
    trustedProxies: ['10.0.0.0/8', 'fd00::/8'],
    limits: { maxConnections: 2000, maxPipelinedRequests: 8, maxSessionRequests: 32, maxStreamBuffer: 1024 * 1024, sendTimeoutMs: 30_000 },
    workers: 1,
  });
  assert.deepEqual(config.passthroughHeaders, ['x-forwarded-user', 'x-tenant-id']);
  assert.deepEqual(config.plugins, [
    {
      name: 'audit',
      module: join(fixtures, 'audit-plugin.ts'),
      config: { level: 'info', redact: ['authorization'] },
      yamlPath: 'VirtualMCPServer/vmcp spec.plugins[0].config',
    },
    { name: 'ratelimit', module: '@gatehouse/plugin-ratelimit', config: undefined, yamlPath: 'VirtualMCPServer/vmcp spec.plugins[1].config' },
  ]);
});

test('a loopback issuer may use plain http; source discovered follows each MCPServer\'s externalAuthConfigRef', async () => {
  const config = await loadVmcpConfig(join(fixtures, 'oidc-loopback.yaml'));
  assert.equal(config.incomingAuth.type === 'oidc' && config.incomingAuth.oidc.issuer, 'http://127.0.0.1:4483');
  assert.deepEqual(config.backends[0]?.externalAuth, { name: 'github-token', type: 'upstreamInject', providerName: 'github' });
  // Defaults of the authorization server.
  assert.deepEqual(config.authServer?.tokenLifespans, { accessTokenMs: 3_600_000, refreshTokenMs: 168 * 3_600_000, authCodeMs: 600_000 });
  assert.deepEqual(config.authServer?.storage, { type: 'memory' });
  assert.deepEqual(config.authServer?.rateLimiting, DEFAULT_AUTH_SERVER_RATE_LIMITS);
  assert.equal(config.authServer?.displayName, null);
  assert.deepEqual([config.authServer?.maxClients, config.authServer?.maxPendingLogins, config.authServer?.maxPendingLoginsPerAddress], [100_000, 50_000, 100]);
  assert.deepEqual(config.authServer?.signingKeys, []);
  const provider = config.authServer?.upstreamProviders[0];
  assert.ok(provider?.type === 'oauth2');
  assert.deepEqual([provider.scopes, provider.userInfo, provider.tokenResponseMapping, provider.clientSecret], [[], null, null, null]);
});

test('cluster OIDC defaults its issuer and audience', () => {
  const config = configOf(`
${GROUP_WITH_ECHO}
apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: vmcp}
spec:
  config: {groupRef: tools}
  incomingAuth: {type: oidc, resourceUrl: "https://mcp.example.com/mcp", oidcConfig: {type: cluster}}
`);
  assert.deepEqual(config.incomingAuth, {
    type: 'oidc',
    resourceUrl: 'https://mcp.example.com/mcp',
    oidc: { type: 'cluster', issuer: 'https://kubernetes.default.svc', audience: 'gatehouse' },
  });
  // outgoingAuth may be left out: source discovered.
  assert.equal(config.outgoingAuthSource, 'discovered');
});

test('redis storage with one address, integer body size, zero grace period', () => {
  const config = configOf(`
${GROUP_WITH_ECHO}
apiVersion: v1
kind: Secret
metadata: {name: keys}
stringData: {hmac: "0123456789abcdef0123456789abcdef"}
---
apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: vmcp}
spec:
  config: {groupRef: tools}
  incomingAuth:
    type: oidc
    resourceUrl: http://localhost:4483/mcp
    oidcConfig: {type: inline, inline: {issuer: "http://localhost:4483", clientId: vmcp, audience: vmcp}}
  authServerConfig:
    issuer: http://localhost:4483
    upstreamProviders: [{name: idp, type: oidc, oidcConfig: {issuerUrl: "https://idp.example.com", clientId: gatehouse}}]
    storage: {type: redis, redis: {addr: "127.0.0.1:6379"}}
  server: {maxBodySize: 1048576, shutdownGracePeriod: 0s, allowedHosts: ["*"], allowedOrigins: ["*"]}
`);
  assert.deepEqual(config.authServer?.storage, {
    type: 'redis',
    sentinel: null,
    address: '127.0.0.1:6379',
    username: null,
    password: null,
    db: 0,
    keyPrefix: 'gatehouse:',
  });
  assert.deepEqual(config.server, { maxBodyBytes: 1_048_576, allowedHosts: ['*'], allowedOrigins: ['*'], shutdownGraceMs: 0, requestTimeoutMs: 60_000, accessLog: false, engine: 'gatehouse', admin: null, trustedProxies: [], limits: { maxConnections: 10_000, maxPipelinedRequests: 16, maxSessionRequests: 64, maxStreamBuffer: 4 * 1024 * 1024, sendTimeoutMs: 60_000 }, workers: 1 });
});

test('only the MCPServers of the group are backends, in document order', () => {
  const config = configOf(`
apiVersion: gatehouse.dev/v1alpha1
kind: MCPGroup
metadata: {name: tools}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPGroup
metadata: {name: other}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPServer
metadata: {name: b}
spec: {url: "http://127.0.0.1:9102/mcp", groupRef: tools}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPServer
metadata: {name: elsewhere}
spec: {url: "http://127.0.0.1:9103/mcp", groupRef: other}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPServer
metadata: {name: a}
spec: {url: "http://127.0.0.1:9101/mcp", groupRef: tools}
---
apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: vmcp}
spec:
  config: {groupRef: tools}
  incomingAuth: {type: anonymous}
`);
  assert.deepEqual(config.backends.map((backend) => backend.name), ['b', 'a']);
  assert.deepEqual(config.incomingAuth, { type: 'anonymous', resourceUrl: null });
});

test("an MCPServer's annotations are the backend's, as written, and changing them reloads the backend", () => {
  const file = (claims: string): string => `
apiVersion: gatehouse.dev/v1alpha1
kind: MCPGroup
metadata: {name: tools}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPServer
metadata:
  name: github
  annotations: {toolhive.stacklok.dev/authz-claims: '${claims}'}
spec: {url: "http://127.0.0.1:9102/mcp", groupRef: tools}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPServer
metadata: {name: plain}
spec: {url: "http://127.0.0.1:9103/mcp", groupRef: tools}
---
apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: vmcp}
spec:
  config: {groupRef: tools}
  incomingAuth: {type: anonymous}
`;
  const before = configOf(file('{"team": "platform"}'));
  assert.deepEqual(before.backends.map((b) => [b.name, b.annotations]), [
    ['github', { 'toolhive.stacklok.dev/authz-claims': '{"team": "platform"}' }],
    ['plain', {}],
  ]);
  const info = backendInfo('github', 'http://127.0.0.1:9102/mcp', 1000, null, {}, undefined, before.backends[0]!.annotations);
  assert.equal(info.annotations['toolhive.stacklok.dev/authz-claims'], '{"team": "platform"}');
  assert.deepEqual(backendInfo('plain', 'http://127.0.0.1:9103/mcp', 1000).annotations, {});
  const after = configOf(file('{"team": "security"}'));
  assert.deepEqual(changesOf(before, after).changed, ['github']);
  assert.ok(nothingChanged(changesOf(before, configOf(file('{"team": "platform"}')))));
});

test('a reload sees a backend whose transport changed: a stdio command, its arguments, environment, bounds; HTTP to SSE at the same URL', () => {
  const file = (spec: string): string => `${GROUP_WITH_ECHO.replace('spec: {url: "http://127.0.0.1:9100/mcp", groupRef: tools}', `spec: {${spec}, groupRef: tools}`)}apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: vmcp}
spec:
  config: {groupRef: tools}
  incomingAuth: {type: anonymous}
`;
  const stdio = (more: string): string => `transport: stdio, command: node, args: [server.js]${more}`;
  const before = configOf(file(stdio('')));
  assert.ok(nothingChanged(changesOf(before, configOf(file(stdio(''))))));
  for (const changed of [
    'transport: stdio, command: nodejs, args: [server.js]',
    'transport: stdio, command: node, args: [server.js, --verbose]',
    stdio(', env: [{name: LEVEL, value: debug}]'),
    stdio(', stdio: {maxProcesses: 2}'),
    stdio(', stdio: {shared: true}'),
  ]) {
    assert.deepEqual(changesOf(before, configOf(file(changed))).changed, ['echo'], changed);
  }
  const http = configOf(file('url: "http://127.0.0.1:9100/mcp"'));
  assert.deepEqual(changesOf(http, configOf(file('url: "http://127.0.0.1:9100/mcp", transport: sse'))).changed, ['echo']);
});
