/**
 * Redis failing under a running gateway: the gateway in this process, configured from YAML as a
 * user writes it, an aggregated group of two backends (`echo`, which gets the caller's upstream
 * token of `corp` through upstreamInject, and `docs`), sessions in Redis, and the embedded
 * authorization server with its storage on the same Redis (another key prefix). Clients are the
 * official SDK's, each registered by itself (RFC 7591) and logged in through the upstream
 * provider, each from a loopback address of its own.
 *
 * - Redis not answering for a while (CLIENT PAUSE on a plain redis-server): an MCP request is a
 *   503 with Retry-After, a refresh a 503 temporarily_unavailable with Retry-After (not a 500);
 *   afterwards the same session and the same refresh token serve.
 * - A Sentinel master whose replica died: a burst of writes does not hold the authorization
 *   server's one Redis connection a second per write (WAIT), and a call reading an upstream token
 *   meanwhile is answered.
 *
 * Skipped without redis-server, a failure under CI=true (test/store/helpers/service.ts).
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { decodeJwt } from 'jose';
import { Agent, fetch as undiciFetch } from 'undici';
import type { RunningVmcp } from '../../core/virtual-mcp-server.ts';
import { REDIRECT } from '../auth-server/helpers/flows.ts';
import { HeadlessOAuthProvider } from '../auth-server/helpers/sdk-oauth.ts';
import { USER } from '../auth-server/helpers/setup.ts';
import { startUpstreamIdp, type UpstreamIdp } from '../auth-server/helpers/upstream-idp.ts';
import { freePort, waitFor } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { captureLog, type CapturedLog } from '../store/helpers/log.ts';
import { redisServerBinary, startRedisProcess, withProbe, type RedisProcess } from '../store/helpers/redis-process.ts';
import { skipIf, unavailable, type Skip } from '../store/helpers/service.ts';
import { startRedisTopology, type RedisTopology } from '../store/helpers/topology.ts';

const PASSWORD = 'failover-data-secret-3e81';
const SENTINEL_PASSWORD = 'failover-sentinel-secret-b27c';
const SESSION_PREFIX = 'failover-sessions:';
const AUTH_PREFIX = 'failover-auth:';
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const SIGNING_KEY = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
const HMAC = randomBytes(32).toString('base64url');

// ---- the gateway and its parts ----

interface Stack {
  readonly issuer: string;
  readonly mcpUrl: URL;
  readonly idp: UpstreamIdp;
  readonly echo: SdkServer;
  readonly gateway: RunningVmcp;
  readonly log: CapturedLog;
  /** The admin listener (/metrics without auth). */
  readonly admin: string;
  stop(): Promise<void>;
}

/** `redis(prefix)`: the `redis:` block (YAML flow style) of a storage with that key prefix. */
async function startStack(redis: (prefix: string) => string): Promise<Stack> {
  const parts: (() => Promise<unknown>)[] = [];
  const stop = async (): Promise<void> => {
    for (const part of parts.reverse()) await part().catch(() => undefined);
  };
  try {
    const port = await freePort();
    const issuer = `http://127.0.0.1:${port}`;
    const idp = await startUpstreamIdp({ user: USER, redirectUri: `${issuer}/oauth/callback`, clientSecret: 'corp-secret' });
    parts.push(() => idp.close());
    const echo = await startSdkServer({ name: 'echo', tools: ['echo'] });
    parts.push(() => echo.close());
    const docs = await startSdkServer({ name: 'docs', tools: ['add'] });
    parts.push(() => docs.close());
    const log = captureLog('info');
    const gateway = await startTestGateway({
      port,
      log: log.log,
      backends: [
        { name: 'echo', url: echo.url, externalAuthConfigRef: 'corp-inject' },
        { name: 'docs', url: docs.url },
      ],
      config: `session: {storage: {type: redis, redis: ${redis(SESSION_PREFIX)}}}`,
      incomingAuth: `  incomingAuth:\n    type: oidc\n    resourceUrl: "${issuer}/mcp"\n    oidcConfig: {type: inline, inline: {issuer: "${issuer}", clientId: vmcp, audience: "${issuer}/mcp"}}`,
      spec:
        `  authServerConfig:\n    issuer: "${issuer}"\n    signingKeySecretRefs: [{name: auth, key: signing}]\n    hmacSecretRefs: [{name: auth, key: hmac}]\n` +
        `    upstreamProviders:\n      - {name: corp, type: oidc, oidcConfig: {issuerUrl: "${idp.issuer}", clientId: gatehouse, clientSecretRef: {name: corp, key: secret}}}\n` +
        `    storage: {type: redis, redis: ${redis(AUTH_PREFIX)}}\n` +
        '  server: {admin: {port: 0}}',
      documents:
        'apiVersion: v1\nkind: Secret\nmetadata: {name: corp}\nstringData: {secret: corp-secret}\n---\n' +
        `apiVersion: v1\nkind: Secret\nmetadata: {name: redis}\nstringData: {password: ${PASSWORD}, sentinel: ${SENTINEL_PASSWORD}}\n---\n` +
        `apiVersion: v1\nkind: Secret\nmetadata: {name: auth}\nstringData:\n  hmac: "${HMAC}"\n  signing: |\n${SIGNING_KEY.trim().split('\n').map((l) => `    ${l}`).join('\n')}\n---\n` +
        'apiVersion: gatehouse.dev/v1alpha1\nkind: MCPExternalAuthConfig\nmetadata: {name: corp-inject}\nspec: {type: upstreamInject, upstreamInject: {providerName: corp}}',
    });
    parts.push(() => gateway.stop());
    return { issuer, mcpUrl: new URL(`${issuer}/mcp`), idp, echo, gateway, log, admin: `http://127.0.0.1:${gateway.server.adminAddress!.port}`, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

const sentinelRedis = (topology: RedisTopology) => (prefix: string): string =>
  `{sentinelConfig: {masterName: ${topology.masterName}, sentinelAddrs: [${topology.sentinelAddresses.map((a) => `"${a}"`).join(', ')}], ` +
  `sentinelPasswordRef: {name: redis, key: sentinel}}, passwordRef: {name: redis, key: password}, keyPrefix: "${prefix}"}`;

const plainRedis = (node: RedisProcess) => (prefix: string): string => `{addr: "${node.address}", passwordRef: {name: redis, key: password}, keyPrefix: "${prefix}"}`;

// ---- the clients ----

/** The last answer to an MCP POST of one client (its calls are sequential, so: the current call's). */
interface LastPost {
  status: number;
  retryAfter: string | null;
}

interface Caller {
  readonly index: number;
  readonly provider: HeadlessOAuthProvider;
  /** Its own loopback address (127.0.0.<10 + index>). */
  readonly agent: Agent;
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
  readonly clientId: string;
  readonly sessionId: string;
  /** The login (the grant) its tokens belong to. */
  readonly tsid: string;
  /** The access token issued at login. */
  readonly firstAccess: string;
  lastPost: LastPost | null;
  /** Transport errors the SDK reported (its GET stream, ...), for the report. */
  readonly transportErrors: string[];
}

/** An SDK client that registers, logs in (401 → discovery → registration → login → token) and connects. */
async function connectCaller(stack: Stack, index: number): Promise<Caller> {
  const provider = new HeadlessOAuthProvider(REDIRECT);
  const agent = new Agent({ connect: { localAddress: `127.0.0.${10 + index}` } });
  const state: { lastPost: LastPost | null; transportErrors: string[] } = { lastPost: null, transportErrors: [] };
  const recording = async (url: string | URL, init?: RequestInit): Promise<Response> => {
    const res = (await undiciFetch(url as never, { ...(init as object), dispatcher: agent } as never)) as unknown as Response;
    if (init?.method === 'POST' && new URL(String(url)).pathname === '/mcp') state.lastPost = { status: res.status, retryAfter: res.headers.get('retry-after') };
    return res;
  };
  const open = (): StreamableHTTPClientTransport => new StreamableHTTPClientTransport(stack.mcpUrl, { authProvider: provider, fetch: recording });
  const first = open();
  await assert.rejects(new Client({ name: `failover-client-${index}`, version: '1.0.0' }).connect(first), (err: unknown) => err instanceof UnauthorizedError);
  const code = provider.landed?.searchParams.get('code');
  assert.ok(code, `client ${index}: the login ended at ${provider.landed?.href}\n${stack.log.text().slice(-2_000)}`);
  await first.finishAuth(code);
  const transport = open();
  const client = new Client({ name: `failover-client-${index}`, version: '1.0.0' });
  await client.connect(transport);
  transport.onerror = (err) => state.transportErrors.push(err.message);
  const access = provider.saved!.access_token;
  const caller: Caller = {
    index,
    provider,
    agent,
    client,
    transport,
    clientId: provider.client!.client_id,
    sessionId: transport.sessionId!,
    tsid: String(decodeJwt(access)['tsid']),
    firstAccess: access,
    get lastPost() {
      return state.lastPost;
    },
    set lastPost(value) {
      state.lastPost = value;
    },
    transportErrors: state.transportErrors,
  };
  return caller;
}

async function closeCaller(caller: Caller): Promise<void> {
  await caller.client.close().catch(() => undefined);
  await caller.agent.close().catch(() => undefined);
}

interface TokenAnswer {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly body: Record<string, unknown>;
}

/** POST /oauth/token with a refresh token, from the client's own address. */
async function refreshOnce(stack: Stack, caller: Caller, refreshToken: string): Promise<TokenAnswer> {
  const res = await undiciFetch(`${stack.issuer}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: caller.clientId }).toString(),
    dispatcher: caller.agent,
  });
  const text = await res.text();
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { text: text.slice(0, 200) };
  }
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body };
}

/** A raw MCP request in the caller's session with `access`: status, Retry-After and the JSON answer. */
async function rawMcp(stack: Stack, caller: Caller, access: string, message: Record<string, unknown>): Promise<{ status: number; retryAfter: string | null; body: Record<string, unknown> }> {
  const res = await fetch(stack.mcpUrl, {
    method: 'POST',
    headers: { ...MCP_HEADERS, authorization: `Bearer ${access}`, 'mcp-session-id': caller.sessionId, 'mcp-protocol-version': caller.transport.protocolVersion ?? '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', ...message }),
  });
  const text = await res.text();
  // An SSE answer carries the JSON-RPC message in its data line.
  const json = text.startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? '{}');
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: JSON.parse(json) as Record<string, unknown> };
}

/** `name{labels} value` lines of one family, as a map from the label text to the value. */
// ---- Redis not answering for a while ----

describe('Redis does not answer for a while (CLIENT PAUSE): retryable answers, then the same session and refresh token', () => {
  let node: RedisProcess | Skip | null = null;
  let dir = '';
  let stack: Stack | null = null;
  let caller: Caller | null = null;

  before(async () => {
    const binary = redisServerBinary();
    if ('missing' in binary) {
      node = unavailable('the Redis pause suite', binary.missing);
      return;
    }
    dir = await mkdtemp(join(tmpdir(), 'gatehouse-redis-'));
    node = await startRedisProcess({ binary: binary.path, dir, role: 'master', password: PASSWORD, config: () => [`requirepass ${PASSWORD}`] });
  });
  after(async () => {
    if (caller !== null) await closeCaller(caller);
    await stack?.stop();
    if (node !== null && !('skip' in node)) await node.kill();
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  it('an MCP request is a 503 with Retry-After, a refresh a 503 temporarily_unavailable with Retry-After', { timeout: 120_000 }, async (t) => {
    if (skipIf(t, node !== null && 'skip' in node ? node : null)) return;
    const redis = node as RedisProcess;
    stack = await startStack(plainRedis(redis));
    caller = await connectCaller(stack, 0);
    const echoed = (await caller.client.callTool({ name: 'echo_echo', arguments: { text: 'before' } })) as CallToolResult;
    assert.deepEqual(echoed.content, [{ type: 'text', text: 'echo: before' }]);
    const refreshToken = caller.provider.saved!.refresh_token!;

    // Every command waits until the pause ends, past the gateway's command timeout (3 s).
    await withProbe(redis.port, PASSWORD, (c) => c.call('CLIENT', 'PAUSE', '4500', 'ALL'));
    const [mcp, token] = await Promise.all([
      rawMcp(stack, caller, caller.provider.saved!.access_token, { id: 7, method: 'tools/call', params: { name: 'echo_echo', arguments: { text: 'paused' } } }),
      refreshOnce(stack, caller, refreshToken),
    ]);
    assert.equal(mcp.status, 503, JSON.stringify(mcp.body));
    assert.equal(mcp.retryAfter, '1');
    assert.deepEqual(mcp.body, { jsonrpc: '2.0', id: 7, error: { code: -32603, message: 'the session storage cannot be reached; try again shortly', data: { error: 'not_ready' } } });
    assert.equal(token.status, 503, JSON.stringify(token.body));
    assert.equal(token.retryAfter, '1');
    assert.deepEqual(token.body, { error: 'temporarily_unavailable', error_description: "the authorization server's storage cannot be reached; try again shortly" });
    const logged = stack.log.lines().find((line) => line.msg === 'the session storage cannot be reached; try again shortly');
    assert.match(String(logged?.['detail']), /^session store: Command timed out/, 'the log says what Redis did');

    // Once Redis answers again: the same session, and the same refresh token.
    const after = await waitFor(async () => {
      const answer = await refreshOnce(stack!, caller!, refreshToken);
      return answer.status === 503 ? null : answer;
    }, 30_000, 200);
    assert.equal(after.status, 200, JSON.stringify(after.body));
    caller.provider.saveTokens({ ...caller.provider.saved!, access_token: String(after.body['access_token']), refresh_token: String(after.body['refresh_token']) });
    const again = (await caller.client.callTool({ name: 'echo_echo', arguments: { text: 'after' } })) as CallToolResult;
    assert.deepEqual(again.content, [{ type: 'text', text: 'echo: after' }]);
    assert.equal(caller.transport.sessionId, caller.sessionId);
  });
});

// ---- a Sentinel master that lost its replica ----

describe('a Sentinel master whose replica died: writes do not hold the connection waiting for it', () => {
  let topology: RedisTopology | Skip | null = null;
  let stack: Stack | null = null;
  let caller: Caller | null = null;

  before(async () => {
    topology = await startRedisTopology({ replicas: 1, sentinels: 1, password: PASSWORD, sentinelPassword: SENTINEL_PASSWORD });
  });
  after(async () => {
    if (caller !== null) await closeCaller(caller);
    await stack?.stop();
    if (topology !== null && !('skip' in topology)) await topology.stop();
  });

  it('a burst of registrations right after the replica died is answered at once, and so is a call reading an upstream token', { timeout: 120_000 }, async (t) => {
    if (skipIf(t, topology !== null && 'skip' in topology ? topology : null)) return;
    const redis = topology as RedisTopology;
    stack = await startStack(sentinelRedis(redis));
    caller = await connectCaller(stack, 0);
    await redis.replicas[0]!.kill();
    await waitFor(() => withProbe(redis.master.port, PASSWORD, async (c) => (await c.info('replication')).includes('connected_slaves:0')), 10_000, 20);

    // Each registration is a write the server waited (WAIT, up to 1 s) for a replica to have. On
    // the one connection of the authorization server, a wait holds every command behind it.
    const started = Date.now();
    const register = async (i: number): Promise<number> => {
      const agent = new Agent({ connect: { localAddress: `127.0.0.${100 + i}` } });
      try {
        const res = await undiciFetch(`${stack!.issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT] }), dispatcher: agent });
        await res.arrayBuffer();
        return res.status;
      } finally {
        await agent.close();
      }
    };
    const [statuses, call] = await Promise.all([
      Promise.all(Array.from({ length: 8 }, (_, i) => register(i))),
      (async () => {
        await sleep(50);
        const callStarted = Date.now();
        const result = (await caller!.client.callTool({ name: 'echo_echo', arguments: { text: 'during the writes' } })) as CallToolResult;
        return { result, ms: Date.now() - callStarted };
      })(),
    ]);
    const elapsed = Date.now() - started;
    console.log(`# a master without its replica: 8 registrations in ${elapsed} ms, a call reading an upstream token meanwhile in ${call.ms} ms`);
    assert.deepEqual(statuses, Array(8).fill(201));
    assert.deepEqual(call.result.content, [{ type: 'text', text: 'echo: during the writes' }]);
    // At most one wait for the replica that is gone (1 s), not one per write.
    assert.ok(elapsed < 2_500, `8 registrations took ${elapsed} ms`);
    assert.ok(call.ms < 2_500, `the call took ${call.ms} ms`);
  });
});
