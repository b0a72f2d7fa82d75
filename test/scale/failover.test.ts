/**
 * Redis failing under a running gateway: the gateway in this process,
 * configured from YAML as a user writes it, an aggregated group of two backends (`echo`, which
 * gets the caller's upstream token of `corp` through upstreamInject, and `docs`), sessions in
 * Redis, and the embedded authorization server with its storage on the same Redis (another key
 * prefix). Clients are the official SDK's, each registered by itself (RFC 7591) and logged in
 * through the upstream provider; every client has a loopback address of its own, so that the
 * authorization server's per-address limits count each apart.
 *
 * - Failover under load: a master, a replica and three sentinels. Eight clients call tools
 *   without pause, each in its own session and with inputs of its own whose echo is checked, and
 *   refresh their tokens every 700 ms; the master is SIGKILLed in the middle (at a moment no
 *   refresh is under way: see the last test), and the calls and refreshes go on into the outage.
 *   No wrong answer; no request lost (each is tried again after a retryable failure until it
 *   succeeds); every failed attempt retryable (HTTP 503 with Retry-After, or in an aggregated
 *   group's JSON-RPC answer the same `not_ready` error) and none slower than a bound. After the
 *   failover every client goes on in its same session, its refresh token refreshes, the access
 *   token from before the kill still serves, the registered client logs in again, the
 *   upstreamInject backend gets the same upstream token of each login as before, and all of it is
 *   on the promoted node. /metrics counts the failed answers (no metric of the storage itself
 *   exists yet). Printed: requests served, retried, lost, the failover time, the time from the
 *   kill to Sentinel's +switch-master.
 * - Redis not answering for a while (CLIENT PAUSE on a plain redis-server): an MCP request is a
 *   503 with Retry-After, a refresh a 503 temporarily_unavailable with Retry-After (not a 500);
 *   afterwards the same session and the same refresh token serve.
 * - A Sentinel master whose replica died: a burst of writes does not hold the authorization
 *   server's one Redis connection a second per write (WAIT), and a call reading an upstream token
 *   meanwhile is answered.
 * - A refresh in flight when the master dies (the old token marked used, its successor not
 *   stored): the client's retry with the same refresh token after the failover gets new tokens,
 *   and its login keeps its upstream token (plugins/auth-server/refresh-retry.ts).
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
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Redis } from 'ioredis';
import { decodeJwt } from 'jose';
import { Agent, fetch as undiciFetch } from 'undici';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { ClientFlows, REDIRECT } from '../auth-server/helpers/flows.ts';
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
const CLIENTS = 8;
/** Calls every client makes before the kill, so that all are known to be serving. */
const WARM_UP_CALLS = 20;
/** Successes every client must have after the switch before the load stops. */
const CALLS_AFTER = 20;
/** One attempt may take this long; longer is a hang (the SDK's request timeout is above it). */
const ATTEMPT_BOUND_MS = 10_000;
/** A request still failing after this long is lost. */
const GIVE_UP_MS = 60_000;
/** Each client refreshes its token this often during the load. */
const REFRESH_EVERY_MS = 700;
/** Longest Retry-After honoured. */
const MAX_RETRY_AFTER_MS = 5_000;
/** When an answer says nothing of when to try again. */
const DEFAULT_BACKOFF_MS = 200;
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
function samples(text: string, family: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${family}{`)) continue;
    const close = line.lastIndexOf('}');
    out.set(line.slice(family.length + 1, close), Number(line.slice(close + 1).trim()));
  }
  return out;
}

function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of items) out[key(item)] = (out[key(item)] ?? 0) + 1;
  return out;
}

// ---- failover under load ----

/** One attempt of a request (a tool call, or a refresh), as the client saw it. */
interface Attempt {
  readonly client: number;
  readonly kind: 'call' | 'refresh';
  readonly start: number;
  readonly end: number;
  readonly ok: boolean;
  /** For a failure: how it looked (`HTTP 503 retry-after=1: ...`, `JSON-RPC -32603 ...`, `timeout: ...`). */
  readonly signature?: string;
  readonly retryable?: boolean;
  /** For a failure answered with an HTTP error status: that status. */
  readonly status?: number;
}

/** What a failed attempt looked like, whether the client may try it again, and when. */
function classify(caller: Caller, err: unknown): { signature: string; retryable: boolean; waitMs: number; status?: number } {
  if (err instanceof StreamableHTTPError) {
    const retryAfter = caller.lastPost?.retryAfter ?? null;
    const seconds = retryAfter === null ? NaN : Number(retryAfter);
    const status = err.code ?? -1;
    const signature = `HTTP ${status}${retryAfter === null ? '' : ` retry-after=${retryAfter}`}: ${err.message.replace(/^.*?Error POSTing to endpoint: /, '').slice(0, 200)}`;
    return { signature, status, retryable: status === 503 && Number.isFinite(seconds), waitMs: Number.isFinite(seconds) ? Math.min(seconds * 1000, MAX_RETRY_AFTER_MS) : DEFAULT_BACKOFF_MS };
  }
  if (err instanceof McpError) {
    if (/timed out/i.test(err.message)) return { signature: `timeout: ${err.message}`, retryable: false, waitMs: 0 };
    // An aggregated group answers a call whose backend credential could not be had with a
    // JSON-RPC error carrying the code of the HTTP error it stands for (upstreamInject with its
    // storage down: not_ready, a 503 in transparent mode), in an HTTP 200.
    const data = err.data as { error?: unknown } | undefined;
    return { signature: `JSON-RPC ${err.code} ${JSON.stringify(err.data ?? null)}: ${err.message}`.slice(0, 300), retryable: data?.error === 'not_ready', waitMs: DEFAULT_BACKOFF_MS };
  }
  return { signature: `thrown: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`.slice(0, 300), retryable: false, waitMs: DEFAULT_BACKOFF_MS };
}

describe('failover under load: the Redis master is SIGKILLed while SDK clients call tools and refresh tokens', () => {
  let topology: RedisTopology | Skip | null = null;
  let stack: Stack | null = null;
  let watcher: Redis | null = null;
  const callers: Caller[] = [];

  before(async () => {
    topology = await startRedisTopology({ replicas: 1, sentinels: 3, password: PASSWORD, sentinelPassword: SENTINEL_PASSWORD });
  });
  after(async () => {
    for (const caller of callers) await closeCaller(caller);
    await stack?.stop();
    watcher?.disconnect();
    if (topology !== null && !('skip' in topology)) await topology.stop();
  });

  it('loses no session, token, client or upstream token; answers the failover window with retryable errors only; never a wrong answer', { timeout: 300_000 }, async (t) => {
    if (skipIf(t, topology !== null && 'skip' in topology ? topology : null)) return;
    const redis = topology as RedisTopology;
    const running = await startStack(sentinelRedis(redis));
    stack = running;
    const { echo, idp, log } = running;

    // Sentinel's own announcements, timed here: +sdown / +odown of the master, +switch-master.
    const announced: { channel: string; message: string; at: number }[] = [];
    watcher = new Redis({ host: '127.0.0.1', port: redis.sentinels[0]!.port, password: SENTINEL_PASSWORD, retryStrategy: () => 200, maxRetriesPerRequest: null });
    watcher.on('error', () => undefined);
    watcher.on('message', (channel: string, message: string) => announced.push({ channel, message, at: Date.now() }));
    await watcher.subscribe('+sdown', '+odown', '+switch-master');

    await Promise.all(Array.from({ length: CLIENTS }, async (_, i) => callers.push(await connectCaller(running, i))));
    callers.sort((x, y) => x.index - y.index);
    assert.equal(new Set(callers.map((c) => c.sessionId)).size, CLIENTS, 'a session per client');
    assert.equal(new Set(callers.map((c) => c.tsid)).size, CLIENTS, 'a login per client');

    // ---- the load ----
    const attempts: Attempt[] = [];
    const wrong: string[] = [];
    const stats = callers.map(() => ({ served: 0, retried: 0, lost: 0, servedAfterSwitch: 0, refreshes: 0, lostRefresh: [] as string[] }));
    let stopping = false;
    let killedAt = 0;
    let switchedAt = 0;
    /** Refreshes wait while this is set; `refreshing` counts those under way (see the kill). */
    let holdRefreshes: Promise<void> | null = null;
    let refreshing = 0;

    /** One call with an input of its own, tried until it succeeds (or GIVE_UP_MS passes: lost). */
    const request = async (caller: Caller, seq: number): Promise<void> => {
      const s = stats[caller.index]!;
      const viaEcho = seq % 2 === 0;
      const text = `client ${caller.index} request ${seq} ${randomBytes(6).toString('hex')}`;
      const [a, b] = [seq, caller.index * 1000 + 7];
      const giveUpAt = Date.now() + GIVE_UP_MS;
      for (let attempt = 1; ; attempt++) {
        const start = Date.now();
        caller.lastPost = null;
        try {
          const result = (await caller.client.callTool(viaEcho ? { name: 'echo_echo', arguments: { text } } : { name: 'docs_add', arguments: { a, b } }, undefined, {
            timeout: ATTEMPT_BOUND_MS * 3,
          })) as CallToolResult;
          const got = result.content[0]?.type === 'text' ? result.content[0].text : JSON.stringify(result.content);
          const expected = viaEcho ? `echo: ${text}` : String(a + b);
          if (result.isError === true || got !== expected) wrong.push(`client ${caller.index} request ${seq}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(result)}`);
          attempts.push({ client: caller.index, kind: 'call', start, end: Date.now(), ok: true });
          s.served++;
          if (switchedAt !== 0 && start > switchedAt) s.servedAfterSwitch++;
          if (attempt > 1) s.retried++;
          return;
        } catch (err) {
          const failure = classify(caller, err);
          attempts.push({ client: caller.index, kind: 'call', start, end: Date.now(), ok: false, signature: failure.signature, retryable: failure.retryable, ...(failure.status === undefined ? {} : { status: failure.status }) });
          if (Date.now() + failure.waitMs > giveUpAt) {
            s.lost++;
            return;
          }
          await sleep(failure.waitMs);
        }
      }
    };

    /**
     * Refreshes the caller's token, trying again after a failure with the same refresh token (the
     * client got no other) until it succeeds; the client uses the new tokens from then on. An
     * invalid_grant means the refresh token (and the grant with it) is gone: recorded as lost.
     */
    const refresh = async (caller: Caller): Promise<boolean> => {
      const s = stats[caller.index]!;
      const held = caller.provider.saved!.refresh_token!;
      const giveUpAt = Date.now() + GIVE_UP_MS;
      for (;;) {
        const start = Date.now();
        let answer: TokenAnswer;
        try {
          answer = await refreshOnce(running, caller, held);
        } catch (err) {
          attempts.push({ client: caller.index, kind: 'refresh', start, end: Date.now(), ok: false, signature: `thrown: ${(err as Error).message}`, retryable: false });
          if (Date.now() > giveUpAt) return false;
          await sleep(DEFAULT_BACKOFF_MS);
          continue;
        }
        const end = Date.now();
        if (answer.status === 200) {
          const access = String(answer.body['access_token']);
          assert.equal(decodeJwt(access)['tsid'], caller.tsid, 'a refresh keeps the login');
          caller.provider.saveTokens({ ...caller.provider.saved!, access_token: access, refresh_token: String(answer.body['refresh_token']) });
          s.refreshes++;
          attempts.push({ client: caller.index, kind: 'refresh', start, end, ok: true });
          return true;
        }
        const seconds = answer.retryAfter === null ? NaN : Number(answer.retryAfter);
        const signature = `HTTP ${answer.status}${answer.retryAfter === null ? '' : ` retry-after=${answer.retryAfter}`}: ${JSON.stringify(answer.body).slice(0, 200)}`;
        attempts.push({ client: caller.index, kind: 'refresh', start, end, ok: false, signature, status: answer.status, retryable: answer.status === 503 && Number.isFinite(seconds) });
        if (answer.status === 400 || answer.status === 401) {
          s.lostRefresh.push(signature);
          return false;
        }
        if (Date.now() > giveUpAt) return false;
        await sleep(Number.isFinite(seconds) ? Math.min(seconds * 1000, MAX_RETRY_AFTER_MS) : DEFAULT_BACKOFF_MS);
      }
    };

    const callLoop = async (caller: Caller): Promise<void> => {
      for (let seq = 1; !stopping; seq++) await request(caller, seq);
    };
    const refreshLoop = async (caller: Caller): Promise<void> => {
      // Spread over the interval, so that the clients' refreshes do not come together.
      await sleep((REFRESH_EVERY_MS * caller.index) / CLIENTS);
      while (!stopping && stats[caller.index]!.lostRefresh.length === 0) {
        while (holdRefreshes !== null) await holdRefreshes;
        refreshing++;
        try {
          await refresh(caller);
        } finally {
          refreshing--;
        }
        await sleep(REFRESH_EVERY_MS);
      }
    };

    const metricsText = async (): Promise<string> => (await fetch(`${running.admin}/metrics`)).text();
    let metricsBefore = '';
    let reported = false;
    /** The figures, printed (also when the test fails on the way). */
    const report = (metricsAfter: string) => {
      reported = true;
      const calls = attempts.filter((a) => a.kind === 'call');
      const failed = attempts.filter((a) => !a.ok).sort((x, y) => x.end - y.end);
      const sum = (key: 'served' | 'retried' | 'lost' | 'refreshes'): number => stats.reduce((n, s) => n + s[key], 0);
      const firstFailure = failed[0];
      const lastFailure = failed.at(-1);
      const firstSuccessAfter = (at: number, started = false): Attempt | undefined =>
        attempts.filter((a) => a.ok && (started ? a.start >= at : a.end > at)).sort((x, y) => x.end - y.end)[0];
      const recovered = firstFailure === undefined ? undefined : firstSuccessAfter(firstFailure.end);
      const recoveredAll = lastFailure === undefined ? undefined : firstSuccessAfter(lastFailure.end, true);
      const slowest = attempts.reduce((max, a) => Math.max(max, a.end - a.start), 0);
      const quietLatencies = calls.filter((a) => a.ok && a.end < killedAt).map((a) => a.end - a.start).sort((x, y) => x - y);
      const quantile = (q: number): number => quietLatencies[Math.min(quietLatencies.length - 1, Math.floor(q * quietLatencies.length))] ?? 0;
      const rel = (at: number | undefined): string => (at === undefined ? '-' : `${at - killedAt} ms`);
      const bySignature = countBy(failed, (a) => `${a.kind}: ${a.signature}`);
      const statusDelta = (route: string): Record<string, number> => {
        const before = samples(metricsBefore, 'gatehouse_requests_total');
        const out: Record<string, number> = {};
        for (const [labels, value] of samples(metricsAfter, 'gatehouse_requests_total')) {
          if (!labels.includes(`route="${route}"`)) continue;
          const delta = value - (before.get(labels) ?? 0);
          if (delta > 0) out[/status="(\d+)"/.exec(labels)?.[1] ?? '?'] = delta;
        }
        return out;
      };
      const mcpStatuses = statusDelta('mcp');
      const storageFamilies = [...new Set(metricsAfter.split('\n').filter((l) => l.startsWith('# TYPE ')).map((l) => l.split(' ')[2]!))].filter((name) => /redis|storage|store|session|sentinel/i.test(name));
      console.log(
        [
          `# failover under load: ${CLIENTS} SDK clients, ${calls.length} call attempts, ${attempts.length - calls.length} refresh attempts`,
          `#   requests served ${sum('served')}, retried ${sum('retried')}, lost ${sum('lost')}, wrong answers ${wrong.length}; token refreshes ${sum('refreshes')}`,
          `#   kill -> +sdown ${rel(announced.find((a) => a.channel === '+sdown' && a.message.startsWith('master'))?.at)}, +odown ${rel(announced.find((a) => a.channel === '+odown')?.at)}, +switch-master (Sentinel's switch) ${rel(switchedAt || undefined)}`,
          `#   failed attempts answered from ${rel(firstFailure?.end)} to ${rel(lastFailure?.end)} after the kill; first success of an attempt started after them ${rel(recoveredAll?.end)}`,
          `#   failover time (first failed answer -> first success after it) ${firstFailure === undefined || recovered === undefined ? 'no failure' : `${recovered.end - firstFailure.end} ms`}`,
          `#   slowest attempt ${slowest} ms; a call before the kill: median ${quantile(0.5)} ms, p99 ${quantile(0.99)} ms`,
          `#   failed attempts ${failed.length}, by answer:`,
          ...Object.entries(bySignature).map(([signature, n]) => `#     ${n} x ${signature}`),
          `#   /metrics gatehouse_requests_total since before the kill: route mcp ${JSON.stringify(mcpStatuses)}, /oauth/token ${JSON.stringify(statusDelta('/oauth/token'))}`,
          `#   /metrics families about redis, storage or sessions: ${storageFamilies.length === 0 ? 'none' : storageFamilies.join(', ')}`,
          ...stats.map(
            (s, i) =>
              `#   client ${i}: served ${s.served} (after the switch ${s.servedAfterSwitch}), retried ${s.retried}, lost ${s.lost}, refreshes ${s.refreshes}` +
              (s.lostRefresh.length > 0 ? `, REFRESH TOKEN LOST: ${s.lostRefresh.join(' | ')}` : '') +
              (callers[i]!.transportErrors.length > 0 ? `; SDK transport errors: ${[...new Set(callers[i]!.transportErrors)].join(' | ').slice(0, 300)}` : ''),
          ),
        ].join('\n'),
      );
      return { failed, mcpStatuses, slowest, rel, lost: sum('lost') };
    };

    const loops = callers.flatMap((caller) => [callLoop(caller), refreshLoop(caller)]);
    try {
      await waitFor(() => stats.every((s) => s.served >= WARM_UP_CALLS && s.refreshes >= 1), 60_000, 20);
      metricsBefore = await metricsText();
      const backendBefore = echo.received.length;
      assert.equal(await redis.currentMasterPort(), redis.master.port);

      // ---- the kill ----
      // With no refresh under way: a refresh the master dies in the middle of is the last test's
      // case. Refreshes start again right after the kill, into the outage.
      let release = (): void => undefined;
      holdRefreshes = new Promise((resolve) => (release = resolve));
      await waitFor(() => refreshing === 0, 30_000, 1);
      killedAt = Date.now();
      await redis.master.kill();
      holdRefreshes = null;
      release();
      await waitFor(() => announced.some((a) => a.channel === '+switch-master'), 60_000, 20);
      switchedAt = announced.find((a) => a.channel === '+switch-master')!.at;
      const newMaster = await redis.currentMasterPort();
      assert.equal(newMaster, redis.replicas[0]!.port, 'Sentinel promoted the replica');
      // The load goes on until every client was served after the switch and refreshed since.
      const refreshesAtSwitch = stats.map((s) => s.refreshes);
      await waitFor(() => stats.every((s, i) => s.lostRefresh.length > 0 || (s.servedAfterSwitch >= CALLS_AFTER && s.refreshes > refreshesAtSwitch[i]!)), 120_000, 50);
      stopping = true;
      await Promise.all(loops);
      const { failed, lost, mcpStatuses, slowest, rel } = report(await metricsText());

      // ---- no wrong answer, nothing lost, only retryable failures, none past the bound ----
      assert.deepEqual(wrong, [], 'every result echoes its own input');
      assert.equal(lost, 0, 'no request lost');
      assert.deepEqual(stats.flatMap((s, i) => s.lostRefresh.map((signature) => `client ${i}: ${signature}`)), [], 'no refresh token lost');
      const notRetryable = failed.filter((a) => a.retryable !== true).map((a) => `${a.kind} of client ${a.client} at ${rel(a.start)}: ${a.signature}`);
      assert.deepEqual(notRetryable, [], 'a request in the failover window gets a retryable error');
      assert.ok(slowest <= ATTEMPT_BOUND_MS, `an attempt took ${slowest} ms (bound ${ATTEMPT_BOUND_MS} ms)`);
      // /metrics counts the failed answers the clients saw.
      for (const [status, n] of Object.entries(countBy(failed.filter((a) => a.kind === 'call' && a.status !== undefined), (a) => String(a.status)))) {
        assert.ok((mcpStatuses[status] ?? 0) >= n, `the clients saw ${n} MCP answers with HTTP ${status}, /metrics counts ${mcpStatuses[status] ?? 0}`);
      }

      // ---- sessions, clients and upstream tokens: the same, and on the promoted node ----
      for (const caller of callers) {
        assert.equal(caller.transport.sessionId, caller.sessionId, `client ${caller.index} is in the session it opened`);
      }
      await withProbe(newMaster, PASSWORD, async (probe) => {
        for (const caller of callers) {
          assert.equal(await probe.exists(`${SESSION_PREFIX}vmcp:session:${caller.sessionId}`), 1, `the session of client ${caller.index} is on the new master`);
          assert.equal(await probe.exists(`${AUTH_PREFIX}oidc:Client:${caller.clientId}`), 1, `the registered client ${caller.index} is on the new master`);
          assert.equal(await probe.hexists(`${AUTH_PREFIX}auth:tokens:${caller.tsid}`, 'corp'), 1, `the upstream token of client ${caller.index} is on the new master`);
        }
      });

      // ---- tokens: the refresh token held now refreshes, the new access token serves the same
      // session, the one from before the kill still does, the client logs in again ----
      for (const caller of callers) {
        assert.ok(await refresh(caller), `client ${caller.index} refreshes after the failover: ${stats[caller.index]!.lostRefresh.join(' | ')}`);
        const result = (await caller.client.callTool({ name: 'echo_echo', arguments: { text: `after ${caller.index}` } })) as CallToolResult;
        assert.deepEqual(result.content, [{ type: 'text', text: `echo: after ${caller.index}` }]);
        assert.equal(caller.transport.sessionId, caller.sessionId);
        const old = await rawMcp(running, caller, caller.firstAccess, { id: 1, method: 'ping' });
        assert.deepEqual([old.status, old.body['result']], [200, {}], `client ${caller.index}: the access token from before the kill, in its session: ${JSON.stringify(old.body)}`);
      }
      const again = await new ClientFlows(running.issuer).login(callers[0]!.clientId);
      assert.ok(again.access.length > 0, 'a client registered before the failover logs in again');

      // ---- the upstreamInject backend: each of its sessions (one per client's session) got
      // the same token of its login before and after the kill, one corp itself accepts ----
      const tokensBySession = (from: number, to: number): Map<string, Set<string>> => {
        const out = new Map<string, Set<string>>();
        for (const r of echo.received.slice(from, to)) {
          const session = r.headers['mcp-session-id'];
          if (typeof session !== 'string') continue;
          if (!out.has(session)) out.set(session, new Set());
          out.get(session)!.add(String(r.headers['authorization']));
        }
        return out;
      };
      const beforeKill = tokensBySession(0, backendBefore);
      const afterKill = tokensBySession(backendBefore, echo.received.length);
      assert.ok(afterKill.size >= CLIENTS, `the echo session of every client was used after the kill (${afterKill.size})`);
      for (const [session, tokens] of afterKill) {
        assert.equal(tokens.size, 1, 'one upstream token per login');
        assert.deepEqual(tokens, beforeKill.get(session), 'the same upstream token as before the kill');
        const [value] = tokens;
        assert.match(value!, /^Bearer /);
        assert.equal((await fetch(`${idp.issuer}/me`, { headers: { authorization: value! } })).status, 200, 'a token corp itself accepts');
      }
      assert.ok(log.lines().some((line) => line.msg === 'sentinel switched the master'), 'the gateway followed the switch');
    } finally {
      stopping = true;
      holdRefreshes = null;
      await Promise.allSettled(loops);
      if (!reported && killedAt !== 0) report(await metricsText().catch(() => ''));
    }
  });
});

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

// ---- a refresh the master dies in the middle of ----

describe('a refresh in flight when the master dies', () => {
  let topology: RedisTopology | Skip | null = null;
  let stack: Stack | null = null;
  let caller: Caller | null = null;
  let subscriber: Redis | null = null;

  before(async () => {
    topology = await startRedisTopology({ replicas: 1, sentinels: 3, password: PASSWORD, sentinelPassword: SENTINEL_PASSWORD });
  });
  after(async () => {
    subscriber?.disconnect();
    if (caller !== null) await closeCaller(caller);
    await stack?.stop();
    if (topology !== null && !('skip' in topology)) await topology.stop();
  });

  /**
   * Refresh tokens rotate, and oidc-provider marks the old one used (RedisAdapter.consume) before
   * it stores the new one and answers. The master dying right after the mark leaves the client
   * holding a used token it never got a successor for; trying it again, as the 503 tells it to,
   * is a retry of a rotation that did not complete (refresh-retry.ts), not a replay: it rotates
   * again, and the grant and its upstream tokens stay.
   */
  it('the client tries its refresh token again after the failover and gets new tokens; its login keeps its upstream token', { timeout: 120_000 }, async (t) => {
    if (skipIf(t, topology !== null && 'skip' in topology ? topology : null)) return;
    const redis = topology as RedisTopology;
    const running = await startStack(sentinelRedis(redis));
    stack = running;
    caller = await connectCaller(running, 0);
    const held = caller.provider.saved!.refresh_token!;

    // The master dies the moment it marks the refresh token used (rotation: the provider marks
    // the old one, then stores the new one): the mark is on the replica, the new token is not.
    await withProbe(redis.master.port, PASSWORD, (c) => c.config('SET', 'notify-keyspace-events', 'K$'));
    subscriber = new Redis({ host: '127.0.0.1', port: redis.master.port, password: PASSWORD, retryStrategy: () => null });
    subscriber.on('error', () => undefined);
    subscriber.on('pmessage', () => redis.master.child.kill('SIGKILL'));
    await subscriber.psubscribe(`__keyspace@0__:${AUTH_PREFIX}oidc:RefreshToken:*:consumed`);
    const during = await refreshOnce(running, caller, held);
    await waitFor(async () => (await redis.currentMasterPort().catch(() => redis.master.port)) !== redis.master.port, 60_000, 50);
    const afterwards = await waitFor(async () => {
      const answer = await refreshOnce(running, caller!, held);
      return answer.status === 503 ? null : answer;
    }, 60_000, 200);
    // The login's upstream token, once whatever the provider did about the refresh is done.
    await sleep(500);
    const upstream = await withProbe(await redis.currentMasterPort(), PASSWORD, (c) => c.hexists(`${AUTH_PREFIX}auth:tokens:${caller!.tsid}`, 'corp'));
    const call = await caller.client.callTool({ name: 'echo_echo', arguments: { text: 'after' } }).then(
      (result) => JSON.stringify((result as CallToolResult).content),
      (err: unknown) => `failed: ${(err as Error).message}`,
    );
    console.log(
      `# a refresh in flight at the kill: answered HTTP ${during.status} ${JSON.stringify(during.body)}; the same refresh token after the failover: ` +
        `HTTP ${afterwards.status} ${JSON.stringify(afterwards.body)}; the login's upstream token ${upstream === 1 ? 'kept' : 'gone'}; a call to echo: ${call.slice(0, 200)}`,
    );
    assert.equal(during.status, 503, 'the refresh the master died in is a retryable failure');
    assert.equal(afterwards.status, 200, `the client's refresh token after the failover: ${JSON.stringify(afterwards.body)}`);
    assert.equal(upstream, 1, 'the login keeps its upstream token');
    assert.equal(call, JSON.stringify([{ type: 'text', text: 'echo: after' }]));
  });
});
