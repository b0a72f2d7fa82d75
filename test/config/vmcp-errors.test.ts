/**
 * Invalid vMCP configs: each problem is reported as the user sees it (one formatted line), at
 * the right path, on the line that holds the offending text; and every problem of a file is
 * reported at once.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ConfigError, formatProblem, formatProblems, schemaIssueMessage } from '../../core/config/problems.ts';
import type { ConfigProblem } from '../../core/config/problems.ts';
import { loadVmcpConfig, validateVmcpFile, validateVmcpText, validateVmcpTextAndPlugins } from '../../core/config/vmcp-config.ts';
import { REPO_ROOT } from '../fixtures/processes.ts';
import { z } from 'zod';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');

/** The fixture as a user would name it on the command line (relative to the working directory). */
function fixture(name: string): string {
  return relative(process.cwd(), join(fixtures, name));
}

function sourceLine(file: string, line: number): string {
  return readFileSync(file, 'utf8').split('\n')[line - 1] ?? '';
}

/**
 * The fixture's problems, formatted, are exactly `expected` (each `line:column resource path: message`,
 * without the file name); the source line of each problem matches its pattern.
 */
async function expectProblems(name: string, expected: ReadonlyArray<readonly [string, RegExp]>): Promise<ConfigProblem[]> {
  const file = fixture(name);
  const result = await validateVmcpFile(file);
  assert.ok(!result.ok, 'the config should be invalid');
  assert.deepEqual(
    result.problems.map(formatProblem),
    expected.map(([line]) => `${file}:${line}`),
  );
  result.problems.forEach((problem, i) => {
    const pattern = expected[i]?.[1];
    if (pattern !== undefined) assert.match(sourceLine(file, problem.line), pattern, `line ${problem.line} of ${name}`);
  });
  return result.problems;
}

const DURATION_FORMS = 'use a number with a unit (ms, s, m or h), for example 500ms, 45s, 10m, 1h, 168h or 1h30m';

test('wrong apiVersion', async () => {
  const [problem] = await expectProblems('error-api-version.yaml', [
    ['1:13 MCPGroup/tools apiVersion: must end in /v1alpha1, for example gatehouse.dev/v1alpha1 (got "gatehouse.dev/v1")', /^apiVersion: gatehouse\.dev\/v1$/],
  ]);
  assert.equal(problem?.path, 'apiVersion');
  assert.equal(problem?.resource, 'MCPGroup/tools');
});

test('unknown kind', async () => {
  const [problem] = await expectProblems('error-unknown-kind.yaml', [
    ['19:7 document 4 kind: unknown kind "MCPGateway": expected one of MCPGroup, MCPServer, VirtualMCPServer, MCPExternalAuthConfig, Secret, ConfigMap', /^kind: MCPGateway$/],
  ]);
  assert.equal(problem?.path, 'kind');
});

test('unknown groupRef', async () => {
  const [problem] = await expectProblems('error-unknown-group.yaml', [
    ['14:22 VirtualMCPServer/vmcp spec.config.groupRef: MCPGroup "toolz" not found (did you mean "tools"?) (MCPGroups in this file: tools)', /groupRef: toolz/],
  ]);
  assert.equal(problem?.path, 'spec.config.groupRef');
});

test('missing url: required for an HTTP transport, naming what to set (points at the parent mapping)', async () => {
  const [problem] = await expectProblems('error-missing-url.yaml', [
    [
      '8:1 MCPServer/echo spec.url: is required with transport: streamable-http: the MCP endpoint of the backend, for example http://127.0.0.1:9100/mcp',
      /^spec:$/,
    ],
  ]);
  assert.equal(problem?.path, 'spec.url');
});

test('bad duration names the value and the accepted forms', async () => {
  const [problem] = await expectProblems('error-bad-duration.yaml', [
    [`8:96 MCPServer/echo spec.timeout: "30 minutes" is not a duration: ${DURATION_FORMS}`, /timeout: 30 minutes/],
  ]);
  assert.equal(problem?.path, 'spec.timeout');
});

test('unknown field, with a suggestion, at the field\'s key', async () => {
  const [problem] = await expectProblems('error-unknown-field.yaml', [
    ['15:35 VirtualMCPServer/vmcp spec.incomingAuth: unknown field "resourceURL" (did you mean "resourceUrl"?)', /resourceURL:/],
  ]);
  const file = fixture('error-unknown-field.yaml');
  assert.equal(sourceLine(file, 15).slice(34, 45), 'resourceURL');
  assert.equal(problem?.path, 'spec.incomingAuth');
});

test('missing secret key, reported at the referencing field', async () => {
  const [problem] = await expectProblems('error-missing-secret-key.yaml', [
    [
      '43:9 VirtualMCPServer/vmcp spec.incomingAuth.oidcConfig.inline.clientSecretRef: Secret "vmcp-oidc" has no key "client-secret" (did you mean "clientSecret"?) (its keys: clientSecret, hmac)',
      /clientSecretRef: \{name: vmcp-oidc, key: client-secret\}/,
    ],
  ]);
  assert.equal(problem?.path, 'spec.incomingAuth.oidcConfig.inline.clientSecretRef');
});

test('bad base64 in a Secret', async () => {
  const [problem] = await expectProblems('error-bad-base64.yaml', [
    ['10:10 Secret/backend-token data.token: is not valid base64: `data` values are base64-encoded (put plain text under `stringData` instead)', /token: "c2VjcmV0!"/],
  ]);
  assert.equal(problem?.path, 'data.token');
});

test('provider name that is not a DNS label', async () => {
  const [problem] = await expectProblems('error-provider-name.yaml', [
    [
      '48:15 VirtualMCPServer/vmcp spec.authServerConfig.upstreamProviders[0].name: must be a DNS label: lowercase letters, digits and "-", ' +
        'starting and ending with a letter or digit, at most 63 characters (got "GitHub")',
      /- name: GitHub$/,
    ],
  ]);
  assert.equal(problem?.path, 'spec.authServerConfig.upstreamProviders[0].name');
});

test('providerName not found among the upstream providers', async () => {
  const [problem] = await expectProblems('error-provider-not-found.yaml', [
    [
      '19:34 MCPExternalAuthConfig/github-token spec.upstreamInject.providerName: upstream provider "gitlab" not found (did you mean "github"?) ' +
        '(upstream providers in spec.authServerConfig.upstreamProviders: github)',
      /providerName: gitlab/,
    ],
  ]);
  assert.equal(problem?.path, 'spec.upstreamInject.providerName');
});

test('authServerConfig.issuer differs from incomingAuth.oidcConfig.inline.issuer', async () => {
  const [problem] = await expectProblems('error-issuer-mismatch.yaml', [
    [
      '45:13 VirtualMCPServer/vmcp spec.authServerConfig.issuer: must equal spec.incomingAuth.oidcConfig.inline.issuer ("http://127.0.0.1:4483"), ' +
        'since incomingAuth validates the tokens this authorization server issues (got "http://localhost:4483")',
      /^ {4}issuer: http:\/\/localhost:4483$/,
    ],
  ]);
  assert.equal(problem?.path, 'spec.authServerConfig.issuer');
});

test('plain http issuer on a host that is not loopback', async () => {
  const [problem] = await expectProblems('error-http-issuer.yaml', [
    [
      '21:17 VirtualMCPServer/vmcp spec.incomingAuth.oidcConfig.inline.issuer: must use https: plain http is allowed only for loopback hosts ' +
        '(localhost, 127.0.0.0/8, ::1) (got "http://auth.example.com")',
      /issuer: http:\/\/auth\.example\.com/,
    ],
  ]);
  assert.equal(problem?.path, 'spec.incomingAuth.oidcConfig.inline.issuer');
});

test('two VirtualMCPServers in one file', async () => {
  await expectProblems('error-two-vmcp.yaml', [
    ['19:7 VirtualMCPServer/vmcp-2 kind: a file holds exactly one VirtualMCPServer, and VirtualMCPServer/vmcp is already defined at line 11', /^kind: VirtualMCPServer$/],
  ]);
});

test('YAML syntax error, where the missing character belongs', async () => {
  await expectProblems('error-yaml-syntax.yaml', [
    ['16:36 VirtualMCPServer/vmcp: YAML syntax error: Flow map in block collection must be sufficiently indented and end with a }', /outgoingAuth: \{source: discovered$/],
  ]);
});

test('a file with several problems reports all of them at once, in file order', async () => {
  const problems = await expectProblems('error-many.yaml', [
    ['11:14 MCPServer/echo spec.transport: must be one of streamable-http, stdio, sse (got "websocket")', /transport: websocket/],
    [`13:12 MCPServer/echo spec.timeout: "10 seconds" is not a duration: ${DURATION_FORMS}`, /timeout: 10 seconds/],
    ['20:13 MCPServer/fetch spec.groupRef: MCPGroup "tool" not found (did you mean "tools"?) (MCPGroups in this file: tools)', /groupRef: tool$/],
    ['36:9 VirtualMCPServer/vmcp spec.incomingAuth.oidcConfig.inline.clientSecretRef: Secret "vmcp-oidc" not found (no Secret in this file)', /clientSecretRef:/],
    [
      '38:18 VirtualMCPServer/vmcp spec.server.maxBodySize: "4MB" is not a size: use an integer number of bytes, or an integer with Ki, Mi or Gi (for example 512Ki, 4Mi, 1Gi)',
      /maxBodySize: 4MB/,
    ],
    ['39:5 VirtualMCPServer/vmcp spec.server: unknown field "acessLog" (did you mean "accessLog"?)', /acessLog: true/],
    ['40:34 VirtualMCPServer/vmcp spec.server.trustedProxies[1]: must be an IP address or a CIDR range, for example 10.0.0.0/8 or fd00::/8 (got "10.0.0.0/33")', /trustedProxies:/],
    [
      `43:15 VirtualMCPServer/vmcp spec.plugins[0].module: file not found: ${join(fixtures, 'plugins/audit.ts')} (relative module paths resolve against the directory of the config file)`,
      /module: \.\/plugins\/audit\.ts/,
    ],
  ]);
  assert.equal(problems.length, 8);
});

test('outgoing auth: strategies need the embedded authorization server; backends must be MCPServers of the group', async () => {
  const NO_AUTH_SERVER =
    'provider "github" not found: the VirtualMCPServer has no spec.authServerConfig, and upstream providers belong to that embedded authorization server';
  await expectProblems('error-outgoing-auth.yaml', [
    [`26:34 MCPExternalAuthConfig/github-token spec.upstreamInject.providerName: ${NO_AUTH_SERVER}`, /providerName: github/],
    ['31:1 MCPExternalAuthConfig/exchange spec.tokenExchange: is required when type is tokenExchange', /^spec:$/],
    ['33:3 MCPExternalAuthConfig/exchange spec.upstreamInject: must not be set when type is tokenExchange', /upstreamInject:/],
    [`33:34 MCPExternalAuthConfig/exchange spec.upstreamInject.providerName: ${NO_AUTH_SERVER}`, /providerName: github/],
    ['47:7 VirtualMCPServer/vmcp spec.outgoingAuth.backends.elsewhere: MCPServer "elsewhere" is not a backend of group "tools" (its groupRef is "other")', /elsewhere:/],
    ['50:7 VirtualMCPServer/vmcp spec.outgoingAuth.backends.ghost: MCPServer "ghost" not found (MCPServers in this file: github, elsewhere)', /ghost:/],
    [
      '52:39 VirtualMCPServer/vmcp spec.outgoingAuth.backends.ghost.externalAuthConfigRef.name: MCPExternalAuthConfig "nothing" not found ' +
        '(MCPExternalAuthConfigs in this file: github-token, exchange)',
      /name: nothing/,
    ],
  ]);
});

test('embedded authorization server rules', async () => {
  await expectProblems('error-auth-server.yaml', [
    [
      '25:3 VirtualMCPServer/vmcp spec.authServerConfig: needs incomingAuth type oidc with oidcConfig type inline and the same issuer: ' +
        'incomingAuth validates the tokens that the embedded authorization server issues',
      /^ {2}authServerConfig:$/,
    ],
    ['27:22 VirtualMCPServer/vmcp spec.authServerConfig.hmacSecretRefs[0]: Secret "keys" key "hmac" holds 9 bytes: an HMAC secret needs at least 32', /hmacSecretRefs/],
    [`28:43 VirtualMCPServer/vmcp spec.authServerConfig.tokenLifespans.accessTokenLifespan: must be greater than zero: ${DURATION_FORMS}`, /accessTokenLifespan: 0s/],
    ['30:9 VirtualMCPServer/vmcp spec.authServerConfig.upstreamProviders[0].oauth2Config: is required when type is oauth2', /- name: corp/],
    ['32:9 VirtualMCPServer/vmcp spec.authServerConfig.upstreamProviders[0].oidcConfig: must not be set when type is oauth2', /oidcConfig:/],
    ['33:15 VirtualMCPServer/vmcp spec.authServerConfig.upstreamProviders[1].name: duplicate provider name "corp": names must be unique (first used at [0])', /- name: corp/],
    [
      '39:9 VirtualMCPServer/vmcp spec.authServerConfig.storage.redis.addr: must not be set together with sentinelConfig: ' +
        'use sentinelConfig (sentinel-managed) or addr (one server), not both',
      /addr: redis:6379/,
    ],
  ]);
});

test('embedded authorization server keys and token lifespans', async () => {
  await expectProblems('error-auth-keys.yaml', [
    ['34:9 VirtualMCPServer/vmcp spec.authServerConfig.signingKeySecretRefs[0]: Secret "keys" key "notakey": cannot read the signing key: it is not a private key in PEM or JWK form', /key: notakey/],
    [
      '35:9 VirtualMCPServer/vmcp spec.authServerConfig.signingKeySecretRefs[1]: Secret "keys" key "public": the signing key is a public key: the authorization server signs tokens, so it needs the private key',
      /key: public/,
    ],
    ['37:28 VirtualMCPServer/vmcp spec.authServerConfig.tokenLifespans.accessTokenLifespan: must be between 1m and 24h', /30s/],
    ['38:29 VirtualMCPServer/vmcp spec.authServerConfig.tokenLifespans.refreshTokenLifespan: must be between 1h and 720h (30 days)', /2000h/],
    ['39:25 VirtualMCPServer/vmcp spec.authServerConfig.tokenLifespans.authCodeLifespan: must be between 30s and 10m', /20m/],
  ]);
  await expectProblems('error-auth-lifespans.yaml', [
    [
      '33:69 VirtualMCPServer/vmcp spec.authServerConfig.tokenLifespans.refreshTokenLifespan: must not be shorter than accessTokenLifespan: a refresh token must outlive the access tokens it renews',
      /refreshTokenLifespan: 1h/,
    ],
  ]);
});

test('embedded authorization server budgets and bounds: each problem at its YAML path', async () => {
  await expectProblems('error-auth-limits.yaml', [
    ['33:18 VirtualMCPServer/vmcp spec.authServerConfig.displayName: contains a control or invisible formatting character', /displayName/],
    ['35:39 VirtualMCPServer/vmcp spec.authServerConfig.rateLimiting.token.perAddress.maxTokens: must be at least 1 (got 0)', /maxTokens: 0/],
    ['35:56 VirtualMCPServer/vmcp spec.authServerConfig.rateLimiting.token.perAddress.refillPeriod: must be between 1s and 24h', /500ms/],
    [
      '36:65 VirtualMCPServer/vmcp spec.authServerConfig.rateLimiting.login.shared.maxTokens: is below perAddress.maxTokens (100): one address could spend the budget every address shares',
      /shared: \{maxTokens: 50\}/,
    ],
    ['37:7 VirtualMCPServer/vmcp spec.authServerConfig.rateLimiting: unknown field "tokens" (did you mean "token"?)', /tokens: \{\}/],
    ['39:33 VirtualMCPServer/vmcp spec.authServerConfig.maxPendingLoginsPerAddress: is above maxPendingLogins (10)', /maxPendingLoginsPerAddress: 20/],
  ]);
});

test('plugins: each module loaded and each config checked by its own schema, with positions and did-you-mean, beside the file\'s other problems', async () => {
  const problems = await expectProblems('error-plugins.yaml', [
    ['8:53 MCPServer/echo spec.transport: must be one of streamable-http, stdio, sse (got "websocket")', /transport: websocket/],
    // A required key that is absent: at the key of the mapping that lacks it.
    ['20:7 VirtualMCPServer/vmcp spec.plugins[0].config.allow: is required', /^ {6}config:$/],
    ['21:9 VirtualMCPServer/vmcp spec.plugins[0].config: unknown field "allw" (did you mean "allow"?)', /allw: \[echo\]/],
    ['25:29 VirtualMCPServer/vmcp spec.plugins[1].config.limits.perMinute: must be more than 0 (got 0)', /perMinute: 0/],
    ['25:43 VirtualMCPServer/vmcp spec.plugins[1].config.limits: unknown field "bursts" (did you mean "burst"?)', /bursts: 20/],
    ['26:16 VirtualMCPServer/vmcp spec.plugins[1].config.tools: must be a list (got "tools_list")', /tools: tools_list/],
    // The plugin's own check, with its own message and path.
    ['30:40 VirtualMCPServer/vmcp spec.plugins[2].config.limits.burst: limits.burst must be at least limits.perMinute', /burst: 30/],
    // No `config:` at all: at the entry's module line.
    ['32:7 VirtualMCPServer/vmcp spec.plugins[3].config: is required', /module: \.\/plugins\/quota\.ts/],
    [`34:15 VirtualMCPServer/vmcp spec.plugins[4].module: cannot load plugin module "acme-gatehouse-plugin": Cannot find package 'acme-gatehouse-plugin' imported from ${fixtures}/`, /module: acme-gatehouse-plugin/],
    [`36:15 VirtualMCPServer/vmcp spec.plugins[5].module: module "${join(fixtures, 'audit-plugin.ts')}" does not export a plugin (a default export made with definePlugin)`, /module: \.\/audit-plugin\.ts/],
  ]);
  assert.equal(problems[2]?.path, 'spec.plugins[0].config');
  // The file's own checks run no plugin code: only the transport is theirs.
  const text = readFileSync(join(fixtures, 'error-plugins.yaml'), 'utf8');
  const own = validateVmcpText(text, join(fixtures, 'error-plugins.yaml'));
  assert.ok(!own.ok);
  assert.deepEqual(own.problems.map((problem) => problem.path), ['spec.transport']);
});

test('plugins: a valid plugin config passes, and the config keeps it as written', async () => {
  const text = readFileSync(join(fixtures, 'error-plugins.yaml'), 'utf8')
    .replace('transport: websocket', 'transport: streamable-http')
    .replace(/ {4}- name: quota\n[\s\S]*$/, '    - name: quota\n      module: ./plugins/quota.ts\n      config: {limits: {perMinute: 60, burst: 90}}\n')
    .replace('allw: [echo]', 'allow: [echo]');
  const file = join(fixtures, 'valid-plugins.yaml');
  const result = await validateVmcpTextAndPlugins(text, file);
  assert.ok(result.ok, result.ok ? '' : formatProblems(result.problems));
  assert.deepEqual(
    result.config.plugins.map((plugin) => [plugin.name, plugin.module, plugin.config]),
    [
      ['allowlist', join(REPO_ROOT, 'examples/plugins/tool-allowlist.ts'), { allow: ['echo'] }],
      ['quota', join(fixtures, 'plugins/quota.ts'), { limits: { perMinute: 60, burst: 90 } }],
    ],
  );
});

test('loadVmcpConfig throws a ConfigError that carries every problem and prints them one per line', async () => {
  const file = fixture('error-many.yaml');
  await assert.rejects(loadVmcpConfig(file), (err: unknown) => {
    assert.ok(err instanceof ConfigError);
    assert.equal(err.problems.length, 8);
    assert.equal(err.message, `invalid configuration (8 problems):\n${formatProblems(err.problems)}`);
    assert.equal(formatProblems(err.problems).split('\n').length, 8);
    return true;
  });
});

test('a file that cannot be read, and a file without a VirtualMCPServer', async () => {
  const missing = await validateVmcpFile('no-such-config.yaml');
  assert.ok(!missing.ok);
  assert.match(formatProblems(missing.problems), /^no-such-config\.yaml: cannot read the file: ENOENT/);

  const empty = validateVmcpText('# nothing here\n', 'empty.yaml');
  assert.ok(!empty.ok);
  assert.equal(formatProblems(empty.problems), 'empty.yaml: no VirtualMCPServer: the file must define exactly one (kind: VirtualMCPServer)');
});

test('duplicate names, a document that is not a mapping, a Secret written both ways, and a group with no MCPServer', () => {
  const result = validateVmcpText(
    `apiVersion: gatehouse.dev/v1alpha1
kind: MCPGroup
metadata: {name: tools}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPGroup
metadata: {name: tools}
---
- just a list
---
apiVersion: v1
kind: Secret
metadata: {name: s}
stringData: {a: b}
spec: {stringData: {c: d}}
---
apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: vmcp}
spec:
  config: {groupRef: tools}
  incomingAuth: {type: anonymous}
`,
    'config.yaml',
  );
  assert.ok(!result.ok);
  assert.deepEqual(result.problems.map(formatProblem), [
    'config.yaml:7:18 MCPGroup/tools metadata.name: duplicate name: MCPGroup/tools is already defined at line 3',
    'config.yaml:9:1 document 3: a resource must be a mapping with apiVersion, kind, metadata and spec',
    'config.yaml:15:1 Secret/s spec: write the Secret\'s fields either at the top level (as Kubernetes does) or under spec, not both (top level has: stringData)',
    'config.yaml:21:22 VirtualMCPServer/vmcp spec.config.groupRef: MCPGroup "tools" has no MCPServer: add an MCPServer with spec.groupRef: tools, or let a registry feed the group (MCPGroup spec.registry)',
  ]);
});

test('a string shorter than its minimum is worded by the minimum: empty when it is 1, a length past that', () => {
  const messageOf = (schema: z.ZodType, value: unknown): string | undefined => schema.safeParse(value, { error: schemaIssueMessage }).error?.issues[0]?.message;
  assert.equal(messageOf(z.string().min(1), ''), 'must not be empty');
  // It said "must not be empty" to a 3-character value of a 16-character minimum; the value is not echoed (it may be a secret).
  assert.equal(messageOf(z.string().min(16), 'abc'), 'must be at least 16 characters long');
});

test('stdio servers: a missing command, a url or outgoing credentials on one, bad env (a name set twice found beside a Secret not found), argv and bounds, and stdio fields on an HTTP server, each at its YAML path', async () => {
  const HTTP_ONLY = 'is for servers the gateway starts (transport: stdio), not for a streamable-http server at a URL';
  const problems = await expectProblems('error-stdio.yaml', [
    ['21:1 MCPServer/no-command spec.command: is required with transport: stdio: the program the gateway starts, for example npx', /^spec:$/],
    ['33:3 MCPServer/with-url spec.url: is for HTTP servers: a stdio server is started from command (remove url, or set transport: streamable-http or sse)', /url: http/],
    [
      '34:3 MCPServer/with-url spec.externalAuthConfigRef: outgoing credentials go on HTTP requests, and a stdio server gets none: give it its secrets in env with valueFrom.secretKeyRef',
      /externalAuthConfigRef:/,
    ],
    ['45:16 MCPServer/bad-env spec.args[1]: must not contain a NUL character', /args: \["ok", "with\\0nul"\]/],
    ['48:14 MCPServer/bad-env spec.env[1].name: duplicate variable name "LEVEL": names must be unique (first used at [0])', /\{name: LEVEL, value: info\}/],
    ['49:31 MCPServer/bad-env spec.env[2].value: must not contain a NUL character', /value: "hello\\0world"/],
    ['51:19 MCPServer/bad-env spec.env[3].valueFrom.secretKeyRef: names a secret value with a NUL character, which no environment can hold', /secretKeyRef: \{name: creds, key: token\}/],
    ['52:7 MCPServer/bad-env spec.env[4]: env "BOTH" needs exactly one of value and valueFrom.secretKeyRef', /name: BOTH/],
    ['53:14 MCPServer/bad-env spec.env[5].name: must be a variable name: letters, digits and "_", not starting with a digit', /name: 1BAD/],
    ['55:19 MCPServer/bad-env spec.env[6].valueFrom.secretKeyRef: Secret "nope" not found (Secrets in this file: creds)', /secretKeyRef: \{name: nope, key: k\}/],
    [
      `56:8 MCPServer/bad-env spec.cwd: is not a directory: ${join(fixtures, 'no-such-directory')} (relative paths resolve against the directory of the config file)`,
      /cwd: \.\/no-such-directory/,
    ],
    ['57:25 MCPServer/bad-env spec.stdio.maxProcesses: must be at least 1 (got 0)', /maxProcesses: 0/],
    ['57:28 MCPServer/bad-env spec.stdio: unknown field "idleTimout" (did you mean "idleTimeout"?)', /idleTimout: 1m/],
    ['66:12 MCPServer/empty-command spec.command: must not be empty', /command: ""/],
    ['67:18 MCPServer/empty-command spec.args[1]: must be a string (got 8080)', /args: \[--port, 8080\]/],
    [`76:3 MCPServer/http-with-stdio spec.command: ${HTTP_ONLY}`, /^ {2}command: node$/],
    [`77:3 MCPServer/http-with-stdio spec.args: ${HTTP_ONLY}`, /^ {2}args:/],
    [`78:3 MCPServer/http-with-stdio spec.env: ${HTTP_ONLY}`, /^ {2}env:/],
    [`79:3 MCPServer/http-with-stdio spec.cwd: ${HTTP_ONLY}`, /^ {2}cwd: \.$/],
    [`80:3 MCPServer/http-with-stdio spec.stdio: ${HTTP_ONLY}`, /^ {2}stdio:/],
  ]);
  assert.deepEqual(
    problems.slice(0, 3).map((problem) => [problem.resource, problem.path]),
    [
      ['MCPServer/no-command', 'spec.command'],
      ['MCPServer/with-url', 'spec.url'],
      ['MCPServer/with-url', 'spec.externalAuthConfigRef'],
    ],
  );
});
