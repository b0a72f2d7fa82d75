/**
 * Identity and proxy headers a client chooses (X-Forwarded-*, Forwarded, X-Real-IP,
 * X-Remote-User, X-Auth-Request-*, the headers of oauth2-proxy, Envoy, Pomerium, Google IAP,
 * AWS ALB, Cloudflare Access...) never reach a backend, where a backend trusting its proxy would
 * believe them next to the credential the gateway injects: in transparent and aggregated mode, in
 * any letter case, on every request of a session. `spec.passthroughHeaders` lets named ones
 * through (and, in aggregated mode, any other named client header); their values have passed the
 * HTTP parser, which refuses CR, LF and NUL on both engines.
 *
 * Raw requests (the exact names and values sent), to real SDK servers that record what they got.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { isIdentityHeader } from '../../core/http/identity-headers.ts';
import { GATEWAY_USER_AGENT } from '../../core/mcp/aggregate/backend-link.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { INITIALIZE, startTestGateway, vmcpYaml, writeConfig } from '../helpers/gateway.ts';
import { loadVmcpConfig } from '../../core/config/vmcp-config.ts';
import { vmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';
import { rawExchange, rawRequestBytes, type RawAnswer } from '../helpers/raw-http.ts';
import type { ReceivedRequest } from '../fixtures/http-host.ts';

/** One of each family, in the letter case the proxies that set them write. */
const IDENTITY: readonly (readonly [string, string])[] = [
  ['X-Forwarded-For', '10.9.8.7'],
  ['X-Forwarded-Host', 'admin.internal'],
  ['X-Forwarded-Proto', 'https'],
  ['X-Forwarded-Port', '443'],
  ['X-Forwarded-Prefix', '/admin'],
  ['X-Forwarded-User', 'root'],
  ['X-Forwarded-Email', 'root@example.com'],
  ['X-Forwarded-Groups', 'admins'],
  ['X-Forwarded-Preferred-Username', 'root'],
  ['X-Forwarded-Access-Token', 'forged'],
  ['X-Forwarded-Client-Cert', 'By=spiffe://cluster/admin'],
  ['Forwarded', 'for=10.9.8.7;proto=https;host=admin.internal'],
  ['X-Real-IP', '10.9.8.7'],
  ['X-Client-IP', '10.9.8.7'],
  ['True-Client-IP', '10.9.8.7'],
  ['CF-Connecting-IP', '10.9.8.7'],
  ['X-Remote-User', 'root'],
  ['X-Remote-Group', 'system:masters'],
  ['Remote-User', 'root'],
  ['X-Auth-Request-User', 'root'],
  ['X-Auth-Request-Email', 'root@example.com'],
  ['X-Auth-Request-Groups', 'admins'],
  ['X-Auth-Request-Access-Token', 'forged'],
  ['X-Original-URL', '/admin/delete'],
  ['X-Original-URI', '/admin/delete'],
  ['X-Rewrite-URL', '/admin/delete'],
  ['X-HTTP-Method-Override', 'DELETE'],
  ['X-Envoy-External-Address', '10.9.8.7'],
  ['X-Envoy-Internal', 'true'],
  ['X-Pomerium-Jwt-Assertion', 'forged'],
  ['X-Goog-Authenticated-User-Email', 'accounts.google.com:root@example.com'],
  ['X-Amzn-Oidc-Identity', 'root'],
  ['X-MS-CLIENT-PRINCIPAL-NAME', 'root'],
  ['Cf-Access-Authenticated-User-Email', 'root@example.com'],
  ['X-WEBAUTH-USER', 'root'],
  // Letter case is the client's to choose.
  ['x-FORWARDED-for', '10.9.8.6'],
  ['X-REAL-ip', '10.9.8.6'],
  // So are underscores, which CGI, WSGI and Rack backends read as dashes (HTTP_X_FORWARDED_FOR).
  ['X_Forwarded_For', '10.9.8.5'],
  ['X_Forwarded_User', 'root'],
  ['Remote_User', 'root'],
  ['X-Auth-Request_Email', 'root@example.com'],
  ['X_Real_IP', '10.9.8.5'],
];
/**
 * `Proxy`: no proxy's header, but a CGI backend (PHP, Apache, Go's net/http/cgi) reads it as its
 * HTTP_PROXY variable, which HTTP client libraries take for the proxy of their own requests
 * (httpoxy, CVE-2016-5385): never passed on.
 */
const HTTPOXY: readonly [string, string] = ['Proxy', 'http://10.9.8.7:3128'];
/** A client header of no family: transparent mode passes it; aggregated mode only when listed. */
const CUSTOM: readonly (readonly [string, string])[] = [['X-Trace-Id', 'trace-1'], ['X-Tenant-Id', 'tenant-7']];
const ALLOW = '  passthroughHeaders: [X-Forwarded-User, x-tenant-id]';

/** A POST as raw bytes, answered (the first SSE event or the JSON body). */
function rawPost(url: string, body: string, headers: readonly (readonly [string, string])[]): Promise<RawAnswer> {
  const all: (readonly [string, string])[] = [['content-type', 'application/json'], ['accept', 'application/json, text/event-stream'], ...headers];
  return rawExchange(url, rawRequestBytes('POST', url, all, body), 5_000, true);
}

function headerOf(answer: RawAnswer, name: string): string | undefined {
  const line = answer.headLines.find((l) => l.toLowerCase().startsWith(`${name}:`));
  return line?.slice(name.length + 1).trim();
}

/** A session through the gateway, every request carrying `headers`: initialize, initialized, tools/list, a call. */
async function session(url: string, tool: string, headers: readonly (readonly [string, string])[]): Promise<void> {
  const init = await rawPost(url, INITIALIZE, headers);
  assert.equal(init.status, 200, init.text.slice(0, 300));
  const id = headerOf(init, 'mcp-session-id');
  assert.ok(id, 'a session id');
  const inSession: (readonly [string, string])[] = [...headers, ['mcp-session-id', id], ['mcp-protocol-version', '2025-11-25']];
  assert.equal((await rawPost(url, '{"jsonrpc":"2.0","method":"notifications/initialized"}', inSession)).status, 202);
  const listed = await rawPost(url, '{"jsonrpc":"2.0","id":2,"method":"tools/list"}', inSession);
  assert.equal(listed.status, 200);
  const called = await rawPost(url, JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: tool, arguments: { text: 'hi' } } }), inSession);
  assert.equal(called.status, 200);
  assert.match(called.body, /hi/);
}

/** The client's requests a backend received since `from` (initialize, lists, the call), not the gateway's own (era probes). */
function clientRequests(backend: SdkServer, from: number): ReceivedRequest[] {
  const own = (r: ReceivedRequest): boolean => r.headers['user-agent'] === GATEWAY_USER_AGENT;
  const seen = backend.received.slice(from).filter((r) => r.method === 'POST' && !own(r) && r.rpcMethods.some((m) => m === 'initialize' || m === 'tools/list' || m === 'tools/call'));
  assert.ok(seen.length > 0, `${backend.name} received the session's requests`);
  return seen;
}

for (const mode of ['transparent', 'aggregated'] as const) {
  describe(`identity and proxy headers (${mode} mode)`, () => {
    let alpha: SdkServer;
    let beta: SdkServer;
    let plain: RunningVmcp;
    let allowing: RunningVmcp;
    const tool = mode === 'transparent' ? 'echo' : 'alpha_echo';
    const backends = (): SdkServer[] => (mode === 'transparent' ? [alpha] : [alpha, beta]);

    before(async () => {
      alpha = await startSdkServer({ name: 'alpha', jsonResponse: true });
      beta = await startSdkServer({ name: 'beta', jsonResponse: true });
      const list = backends().map((b) => ({ name: b.name, url: b.url }));
      plain = await startTestGateway({ backends: list });
      allowing = await startTestGateway({ backends: list, spec: ALLOW });
    });
    after(async () => {
      await plain.stop();
      await allowing.stop();
      await alpha.close();
      await beta.close();
    });

    it('every family the suite sends is one the gateway knows', () => {
      for (const [name] of IDENTITY) assert.ok(isIdentityHeader(name.toLowerCase()), name);
      for (const [name] of CUSTOM) assert.ok(!isIdentityHeader(name.toLowerCase()), name);
    });

    it('no backend request of a session carries any of them, in any letter case', async () => {
      const from = backends().map((b) => b.received.length);
      await session(plain.url, tool, [...IDENTITY, ...CUSTOM, HTTPOXY]);
      backends().forEach((backend, i) => {
        for (const request of clientRequests(backend, from[i]!)) {
          const what = `${backend.name} ${request.rpcMethods.join(',')}`;
          for (const name of Object.keys(request.headers)) assert.ok(!isIdentityHeader(name), `${what} carried ${name}`);
          assert.equal(request.headers['proxy'], undefined, `${what} carried Proxy`);
          for (const [name] of IDENTITY) assert.equal(request.headers[name.toLowerCase()], undefined, `${what} carried ${name}`);
          // Transparent mode forwards the client's other headers; aggregated mode writes its own.
          const custom = mode === 'transparent' ? 'trace-1' : undefined;
          assert.equal(request.headers['x-trace-id'], custom, `${what}: X-Trace-Id`);
        }
      });
    });

    it('passthroughHeaders lets the named ones through, with the client\'s value, and no other', async () => {
      const from = backends().map((b) => b.received.length);
      await session(allowing.url, tool, [...IDENTITY, ...CUSTOM]);
      backends().forEach((backend, i) => {
        for (const request of clientRequests(backend, from[i]!)) {
          const what = `${backend.name} ${request.rpcMethods.join(',')}`;
          assert.equal(request.headers['x-forwarded-user'], 'root', `${what}: the listed identity header`);
          assert.equal(request.headers['x-tenant-id'], 'tenant-7', `${what}: the listed custom header`);
          const others = Object.keys(request.headers).filter((name) => isIdentityHeader(name) && name !== 'x-forwarded-user');
          assert.deepEqual(others, [], `${what}: unlisted identity headers`);
          assert.equal(request.headers['x-trace-id'], mode === 'transparent' ? 'trace-1' : undefined, `${what}: X-Trace-Id`);
        }
      });
    });
  });
}

describe('passthroughHeaders on reload', () => {
  let alpha: SdkServer;
  let gateway: RunningVmcp;
  before(async () => {
    alpha = await startSdkServer({ name: 'alpha', jsonResponse: true });
    gateway = await startTestGateway({ backends: [{ name: 'alpha', url: alpha.url }] });
  });
  after(async () => {
    await gateway.stop();
    await alpha.close();
  });

  it('is applied by a reload, and taken back by the next', async () => {
    const reload = async (spec: string | undefined) => {
      const config = await loadVmcpConfig(await writeConfig(vmcpYaml({ backends: [{ name: 'alpha', url: alpha.url }], ...(spec === undefined ? {} : { spec }) })));
      return gateway.reload(config, vmcpBuiltins(config));
    };
    const forwardedUser = async (): Promise<unknown[]> => {
      const from = alpha.received.length;
      assert.equal((await rawPost(gateway.url, INITIALIZE, [['X-Forwarded-User', 'root']])).status, 200);
      return clientRequests(alpha, from).map((r) => r.headers['x-forwarded-user']);
    };
    assert.deepEqual(await forwardedUser(), [undefined]);
    const applied = await reload(ALLOW);
    assert.equal(applied.status, 'applied');
    assert.deepEqual(applied.status === 'applied' && applied.changes.other, ['passthroughHeaders']);
    assert.deepEqual(await forwardedUser(), ['root']);
    assert.equal((await reload(undefined)).status, 'applied');
    assert.deepEqual(await forwardedUser(), [undefined]);
  });
});

for (const engine of ['gatehouse', 'node'] as const) {
  describe(`a passed-through header's hostile value (${engine} engine)`, () => {
    let alpha: SdkServer;
    let gateway: RunningVmcp;
    before(async () => {
      alpha = await startSdkServer({ name: 'alpha', jsonResponse: true });
      gateway = await startTestGateway({ backends: [{ name: 'alpha', url: alpha.url }], spec: `${ALLOW}\n  server: {engine: ${engine}}` });
    });
    after(async () => {
      await gateway.stop();
      await alpha.close();
    });

    it('a value with NUL, a bare CR or LF, or folded onto a second line is refused (400) and nothing reaches the backend', async () => {
      for (const value of ['a\0b', 'a\rb', 'a\r\n b', 'a\nX-Injected: yes']) {
        const from = alpha.received.length;
        const answer = await rawPost(gateway.url, INITIALIZE, [['X-Forwarded-User', value]]);
        const what = `${JSON.stringify(value)}: answered ${answer.status}`;
        assert.equal(answer.status, 400, what);
        const forwarded = alpha.received.slice(from).filter((r) => r.headers['user-agent'] !== GATEWAY_USER_AGENT);
        assert.deepEqual(forwarded, [], `${what}: the backend got nothing of it`);
      }
      // A second header line is the client's own header, joined as any repeated header, never a CR or LF.
      const from = alpha.received.length;
      const answer = await rawPost(gateway.url, INITIALIZE, [['X-Forwarded-User', 'a\r\nX-Forwarded-User: b']]);
      assert.equal(answer.status, 200);
      const values = alpha.received.slice(from).map((r) => r.headers['x-forwarded-user']).filter((v) => v !== undefined);
      assert.deepEqual(values, ['a, b']);
      // And the gateway still serves.
      assert.equal((await rawPost(gateway.url, INITIALIZE, [['X-Forwarded-User', 'alice']])).status, 200);
    });
  });
}
