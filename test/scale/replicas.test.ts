/**
 * Replicas as one. Three gateway processes (the real CLI, `gatehouse vmcp
 * serve --config FILE`, one YAML file they all read) behind nginx round robin on loopback, sharing
 * Redis through Sentinel (a master, a replica, three sentinels; passwords on both) for the
 * sessions and the embedded authorization server's records, and one signing key and HMAC secret
 * (Secrets in the file). The group is aggregated: `profile` gets the upstream IdP's token of the
 * caller's login (upstreamInject), `reports` a token a real RFC 8693 STS minted for it
 * (tokenExchange), `ask` elicits and samples.
 *
 * The official SDK client with its OAuth client provider, every request through nginx (so each
 * lands on the next replica):
 *  1. logs in through the embedded authorization server (401 → metadata → registration → the
 *     upstream IdP → consent → token), opens one aggregated session and lists the tools;
 *  2. calls every backend on every replica: `profile` sees the IdP's token (the same one from
 *     every replica: the login's tokens are in Redis), `reports` the STS's token. The exchange
 *     cache is per process (examples/deploy/README.md: one exchange per user, audience and token lifetime): each
 *     replica exchanges at most once, the STS sees at most three exchanges, and none more for
 *     repeated calls;
 *  3. elicitation and sampling: the request reaches the client on the call's stream from one
 *     replica, and the answer, posted through nginx, lands on another (nginx's access log says
 *     which replica served what) — and the call completes;
 *  4. SIGKILLs the replica serving a call in flight, and goes on calling: no call needs a retry,
 *     none is lost, the session (same Mcp-Session-Id, one initialize) and the tokens (a refresh
 *     through nginx, then the new access token) keep working. The call in flight is resumed, not
 *     retried: the SDK resumes its stream (GET with Last-Event-ID) through a survivor, the
 *     backend replays it, and the survivor delivers the response. Which response a resumed
 *     stream may carry is sealed into the event ids the client got (a ticket naming the session,
 *     the backend and the request, under the key the replicas share), and the delivery is claimed
 *     once in Redis: core/mcp/aggregate/resume-tickets.ts. The killed replica recorded nothing.
 *     (Before, that permission lived in the memory of the replica that routed the call: the
 *     survivor dropped the response, and the call timed out after 10 s and was sent again.)
 * The figures (requests served, retried, lost, per replica) are printed on one line.
 *
 * Without nginx or redis-server: skipped with the reason, a failure under CI=true.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { dirname } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { HeadlessOAuthProvider } from '../auth-server/helpers/sdk-oauth.ts';
import { USER } from '../auth-server/helpers/setup.ts';
import { startUpstreamIdp, type UpstreamIdp } from '../auth-server/helpers/upstream-idp.ts';
import { nginxBinary, startNginx, type Nginx, type NginxAccess } from '../fixtures/nginx.ts';
import { freePort, waitFor } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { serveCli, type ServedCli } from '../helpers/cli.ts';
import { vmcpYaml, writeConfig } from '../helpers/gateway.ts';
import { exchangeYaml, STS_SECRET, startSts, type TestSts } from '../outgoing-auth/helpers/sts.ts';
import { skipIf, unavailable, type Skip } from '../store/helpers/service.ts';
import { startRedisTopology, type RedisTopology } from '../store/helpers/topology.ts';

const SUITE = 'replicas as one (test/scale)';
const REPLICAS = 3;
const REDIRECT = 'http://127.0.0.1:7781/oauth/callback';
const PASSWORD = 'scale-data-secret-5e1b';
const SENTINEL_PASSWORD = 'scale-sentinel-secret-93af';
const SIGNING_KEY = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
const HMAC = randomBytes(32).toString('base64url');

/** One HTTP request of the SDK client, as it went through nginx. */
interface Sent {
  readonly method: string;
  readonly path: string;
  /** The JSON-RPC method, `answer` for a response the client posted, '' without a JSON body. */
  readonly rpc: string;
  /** The tool of a tools/call. */
  readonly tool: string;
  readonly status: number;
  /** The replica that answered (the last one nginx tried), from X-Upstream; null when the request itself failed. */
  readonly upstream: string | null;
  /** A GET with Last-Event-ID: the SDK resuming a stream that broke off. */
  readonly resumes: boolean;
}

interface Replica {
  readonly index: number;
  readonly cli: ServedCli;
  readonly port: number;
  readonly address: string;
  /** The admin listener (/metrics without auth). */
  readonly admin: string;
  killed: boolean;
}

/** The replicas' one configuration file. */
function replicaConfig(o: { issuer: string; idp: string; sts: TestSts; backends: Record<'profile' | 'reports' | 'ask', string>; redis: RedisTopology }): string {
  const sentinels = o.redis.sentinelAddresses.map((a) => `"${a}"`).join(', ');
  const redis = (prefix: string): string =>
    `{type: redis, redis: {sentinelConfig: {masterName: ${o.redis.masterName}, sentinelAddrs: [${sentinels}], sentinelPasswordRef: {name: redis, key: sentinel}}, ` +
    `passwordRef: {name: redis, key: password}, keyPrefix: "${prefix}"}}`;
  return vmcpYaml({
    backends: [
      { name: 'profile', url: o.backends.profile, externalAuthConfigRef: 'corp-inject' },
      { name: 'reports', url: o.backends.reports, externalAuthConfigRef: 'reports-exchange' },
      { name: 'ask', url: o.backends.ask },
    ],
    config: `session: {storage: ${redis('scale-vmcp:')}}`,
    incomingAuth: `  incomingAuth:\n    type: oidc\n    resourceUrl: "${o.issuer}/mcp"\n    oidcConfig: {type: inline, inline: {issuer: "${o.issuer}", clientId: vmcp, audience: "${o.issuer}/mcp"}}`,
    spec:
      `  authServerConfig:\n    issuer: "${o.issuer}"\n` +
      '    signingKeySecretRefs: [{name: auth, key: signing}]\n    hmacSecretRefs: [{name: auth, key: hmac}]\n' +
      `    upstreamProviders:\n      - {name: corp, type: oidc, oidcConfig: {issuerUrl: "${o.idp}", clientId: gatehouse, clientSecretRef: {name: corp, key: secret}, scopes: [openid, profile, email]}}\n` +
      `    storage: ${redis('scale-auth:')}\n` +
      '  server: {accessLog: true, trustedProxies: ["127.0.0.1"], admin: {port: 0}}',
    documents: [
      'apiVersion: v1\nkind: Secret\nmetadata: {name: corp}\nstringData: {secret: corp-secret}',
      `apiVersion: v1\nkind: Secret\nmetadata: {name: auth}\nstringData:\n  hmac: "${HMAC}"\n  signing: |\n${SIGNING_KEY.trim().split('\n').map((l) => `    ${l}`).join('\n')}`,
      `apiVersion: v1\nkind: Secret\nmetadata: {name: redis}\nstringData: {password: ${PASSWORD}, sentinel: ${SENTINEL_PASSWORD}}`,
      STS_SECRET,
      'apiVersion: gatehouse.dev/v1alpha1\nkind: MCPExternalAuthConfig\nmetadata: {name: corp-inject}\nspec: {type: upstreamInject, upstreamInject: {providerName: corp}}',
      // No subjectProviderName: with the embedded server the subject is corp's token of the login.
      exchangeYaml('reports-exchange', o.sts, 'reports-api').trimEnd(),
    ].join('\n---\n'),
  });
}

const bearer = (value: string | string[] | undefined): string => String(value ?? '').replace(/^Bearer /, '');
const textOf = (result: unknown): string => {
  const first = (result as CallToolResult).content?.[0];
  return first !== undefined && first.type === 'text' ? first.text : '';
};
/** The body of an access-log line, parsed (null when it is not a JSON-RPC message). */
const rpcOf = (entry: NginxAccess): Record<string, any> | null => {
  try {
    return JSON.parse(entry.body) as Record<string, any>;
  } catch {
    return null;
  }
};
const servedBy = (entry: NginxAccess): string => entry.upstreams.at(-1) ?? '';

/** Gateway processes still running when this process exits (a crash, a timeout): not left behind. */
const running = new Set<ServedCli>();
process.once('exit', () => {
  for (const cli of running) cli.child.kill('SIGKILL');
});

describe(SUITE, { timeout: 280_000 }, () => {
  let skip: Skip | null = null;
  let topology: RedisTopology | null = null;
  let nginx: Nginx | null = null;
  let idp: UpstreamIdp | null = null;
  let sts: TestSts | null = null;
  const backends: SdkServer[] = [];
  let profile: SdkServer;
  let reports: SdkServer;
  let ask: SdkServer;
  const replicas: Replica[] = [];
  let configFile = '';
  let issuer = '';
  const startedAt = Date.now();

  // The client's side, kept across the steps.
  const sent: Sent[] = [];
  const clientErrors: string[] = [];
  let provider: HeadlessOAuthProvider | null = null;
  let client: Client | null = null;
  let transport: StreamableHTTPClientTransport | null = null;
  let sessionId = '';
  /** Set by the first step; the later ones need its session. */
  let loggedIn = false;
  const figures = { served: 0, retried: 0, lost: 0, failures: [] as string[] };

  const recordingFetch: FetchLike = async (input, init) => {
    const method = (init?.method ?? 'GET').toUpperCase();
    let rpc = '';
    let tool = '';
    if (typeof init?.body === 'string') {
      try {
        const message = JSON.parse(init.body) as { method?: string; params?: { name?: string } };
        rpc = message.method ?? 'answer';
        tool = message.params?.name ?? '';
      } catch {
        // a form body (the token endpoint)
      }
    }
    const path = new URL(input instanceof Request ? input.url : String(input)).pathname;
    const resumes = method === 'GET' && new Headers(init?.headers).has('last-event-id');
    try {
      const response = await fetch(input, init);
      const upstream = response.headers.get('x-upstream')?.split(/\s*,\s*|\s+:\s+/).at(-1) ?? null;
      sent.push({ method, path, rpc, tool, status: response.status, upstream, resumes });
      return response;
    } catch (err) {
      sent.push({ method, path, rpc, tool, status: 0, upstream: null, resumes });
      throw err;
    }
  };

  /** A tools/call; a failure is retried once (counted), a second failure is lost (counted). */
  async function call(name: string, args: Record<string, unknown>, timeout = 20_000): Promise<CallToolResult | null> {
    for (let attempt = 0; ; attempt++) {
      try {
        const result = (await client!.callTool({ name, arguments: args }, undefined, { timeout })) as CallToolResult;
        if (result.isError === true) throw new Error(`tool error: ${textOf(result)}`);
        figures.served++;
        return result;
      } catch (err) {
        figures.failures.push(`${name} (attempt ${attempt + 1}): ${(err as Error).message}`);
        if (attempt === 1) {
          figures.lost++;
          return null;
        }
        figures.retried++;
      }
    }
  }

  /**
   * nginx's access log once it has what `complete` looks for: nginx writes a request's line after
   * its last byte, which the client may have read (and gone on) a moment before.
   */
  const logWhen = (complete: (log: NginxAccess[]) => boolean): Promise<NginxAccess[]> =>
    waitFor(async () => {
      const log = await nginx!.accessLog();
      return complete(log) ? log : null;
    }, 10_000);
  /** Whether the log has the line of the call of `tool` whose arguments contain `text`. */
  const hasCall = (log: NginxAccess[], tool: string, text: string): boolean =>
    log.some((e) => rpcOf(e)?.['params']?.['name'] === tool && JSON.stringify(rpcOf(e)?.['params']?.['arguments']).includes(text));

  const replicaAt = (address: string | null): Replica | undefined => replicas.find((r) => r.address === address);

  async function exchangeMisses(replica: Replica): Promise<number> {
    const text = await (await fetch(`${replica.admin}/metrics`)).text();
    const line = /^gatehouse_token_exchange_cache_total\{result="miss"\} (\d+)/m.exec(text);
    return Number(line?.[1] ?? 0);
  }

  before(async () => {
    // Nothing is started when a binary is missing: skipped with the reason (a failure under CI=true).
    const binary = nginxBinary();
    if ('missing' in binary) {
      skip = unavailable(SUITE, binary.missing);
      return;
    }
    const redis = await startRedisTopology({ replicas: 1, sentinels: 3, password: PASSWORD, sentinelPassword: SENTINEL_PASSWORD });
    if ('skip' in redis) {
      skip = redis;
      return;
    }
    topology = redis;
    const publicPort = await freePort();
    issuer = `http://127.0.0.1:${publicPort}`;
    idp = await startUpstreamIdp({ user: USER, redirectUri: `${issuer}/oauth/callback`, clientSecret: 'corp-secret' });
    const idpIssuer = idp.issuer;
    // The STS accepts corp's tokens: those corp's userinfo endpoint accepts.
    sts = await startSts({
      verifySubject: async (token) => {
        const me = await fetch(`${idpIssuer}/me`, { headers: { authorization: `Bearer ${token}` } });
        return me.status === 200 ? String(((await me.json()) as { sub: string }).sub) : null;
      },
    });
    profile = await startSdkServer({ name: 'profile', tools: ['echo'] });
    reports = await startSdkServer({ name: 'reports', tools: ['echo'] });
    ask = await startSdkServer({ name: 'ask', tools: ['echo', 'elicit', 'sample', 'slow'] });
    backends.push(profile, reports, ask);
    configFile = await writeConfig(replicaConfig({ issuer, idp: idpIssuer, sts, backends: { profile: profile.url, reports: reports.url, ask: ask.url }, redis }));
    const started = await Promise.allSettled(Array.from({ length: REPLICAS }, () => serveCli('vmcp', configFile, ['--log-level', 'info'])));
    for (const [index, outcome] of started.entries()) {
      if (outcome.status === 'rejected') continue;
      const cli = outcome.value;
      running.add(cli);
      void cli.exited.then(() => running.delete(cli));
      const port = Number(new URL(cli.url).port);
      const listening = cli.logs.find((l) => l.msg === 'virtual MCP server listening')!;
      replicas.push({ index, cli, port, address: `127.0.0.1:${port}`, admin: String(listening['admin']), killed: false });
    }
    const failed = started.find((s) => s.status === 'rejected');
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
    const balancer = await startNginx({ upstreams: replicas.map((r) => r.address), port: publicPort, suite: SUITE });
    if ('skip' in balancer) {
      skip = balancer;
      return;
    }
    nginx = balancer;
  }, { timeout: 180_000 });

  after(async () => {
    const quietly = async (what: () => Promise<unknown> | undefined): Promise<void> => {
      try {
        await what();
      } catch {
        // everything else is still stopped
      }
    };
    await quietly(() => client?.close());
    await quietly(() => nginx?.stop());
    await Promise.all(
      replicas.map((r) =>
        quietly(async () => {
          if (r.cli.child.exitCode !== null || r.cli.child.signalCode !== null) return;
          const forced = setTimeout(() => r.cli.child.kill('SIGKILL'), 10_000);
          await r.cli.stop();
          clearTimeout(forced);
        }),
      ),
    );
    await Promise.all(backends.map((b) => quietly(() => b.close())));
    await quietly(() => sts?.close());
    await quietly(() => idp?.close());
    await quietly(() => topology?.stop());
    if (configFile !== '') await quietly(() => rm(dirname(configFile), { recursive: true, force: true }));
  });

  it('the SDK client logs in through the embedded authorization server behind nginx and opens one aggregated session', async (t) => {
    if (skipIf(t, skip)) return;
    const url = new URL(`${issuer}/mcp`);
    provider = new HeadlessOAuthProvider(REDIRECT);
    const first = new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: recordingFetch });
    await assert.rejects(new Client({ name: 'scale-test', version: '1.0.0' }).connect(first), (err: unknown) => err instanceof UnauthorizedError);
    const code = provider.landed?.searchParams.get('code');
    assert.ok(code !== null && code !== undefined, `the login ran to the redirect URI: ${provider.landed?.href}`);
    await first.finishAuth(code);
    assert.ok(provider.saved?.access_token !== undefined);

    transport = new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: recordingFetch });
    client = new Client({ name: 'scale-test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} }, sampling: {} } });
    client.onerror = (err) => clientErrors.push(err.message);
    client.setRequestHandler(ElicitRequestSchema, async (request) => ({ action: 'accept', content: { name: `Ann for ${request.params.message}` } }));
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      const content = request.params.messages[0]?.content;
      const prompt = content !== undefined && !Array.isArray(content) && content.type === 'text' ? content.text : '';
      return { model: 'scale-model', role: 'assistant', content: { type: 'text', text: `sampled ${prompt}` } };
    });
    await client.connect(transport);
    sessionId = transport.sessionId ?? '';
    assert.ok(sessionId !== '', 'an aggregated session');
    const tools = (await client.listTools()).tools.map((tool) => tool.name).sort();
    for (const name of ['profile_echo', 'reports_echo', 'ask_echo', 'ask_elicit', 'ask_sample', 'ask_slow']) assert.ok(tools.includes(name), `${name} in ${tools.join(', ')}`);

    // The login's steps went through every replica.
    const log = await logWhen((l) => l.some((e) => rpcOf(e)?.['method'] === 'tools/list'));
    const oauth = log.filter((e) => e.uri.startsWith('/oauth/') || e.uri.startsWith('/.well-known/'));
    assert.equal(new Set(oauth.map(servedBy)).size, REPLICAS, `the login's requests were served by every replica: ${oauth.map((e) => `${e.method} ${e.uri.split('?')[0]} ${servedBy(e)}`).join('; ')}`);
    loggedIn = true;
  });

  it('every backend on every replica: upstreamInject presents the IdP\'s token, tokenExchange the STS\'s, exchanged at most once per replica', async (t) => {
    if (skipIf(t, skip)) return;
    assert.ok(loggedIn, 'the login step failed');
    const fromProfile = profile.received.length;
    const fromReports = reports.received.length;
    // Calls of one tool in a row until every replica has served one (round robin: three calls).
    for (const tool of ['profile_echo', 'reports_echo', 'ask_echo']) {
      const on = new Set<string>();
      for (let i = 0; on.size < REPLICAS; i++) {
        assert.ok(i < 3 * REPLICAS, `${tool} reached only ${[...on].join(', ')}`);
        const from = sent.length;
        const result = await call(tool, { text: `${tool} ${i}` });
        assert.match(textOf(result), new RegExp(`${tool.split('_')[0]}: ${tool} ${i}`));
        for (const s of sent.slice(from)) if (s.tool === tool && s.upstream !== null) on.add(s.upstream);
      }
    }

    // upstreamInject: corp's own token of this login, the same from every replica (the login's tokens are in Redis).
    // (Calls only: the health checks carry no credential.)
    const callsOf = (backend: SdkServer, from: number) => backend.received.slice(from).filter((r) => r.rpcMethods.includes('tools/call'));
    const injected = new Set(callsOf(profile, fromProfile).map((r) => bearer(r.headers['authorization'])));
    assert.equal(injected.size, 1, 'one token of the login, whichever replica sent it');
    const [corpToken] = [...injected];
    assert.ok(corpToken !== undefined && corpToken !== '' && corpToken !== provider!.saved!.access_token, 'not the gateway\'s own token');
    const me = await fetch(`${idp!.issuer}/me`, { headers: { authorization: `Bearer ${corpToken}` } });
    assert.equal(me.status, 200, 'a token corp itself accepts');
    assert.equal(((await me.json()) as { sub: string }).sub, USER.sub);

    // tokenExchange: the STS's token for reports-api, for this user.
    const exchanged = new Set(callsOf(reports, fromReports).map((r) => bearer(r.headers['authorization'])));
    for (const token of exchanged) {
      const claims = await sts!.verify(token);
      assert.deepEqual([claims.aud, claims.sub], ['reports-api', USER.sub]);
    }
    const exchangesOfLogin = (): number => sts!.requests.filter((r) => r.subjectToken === corpToken && r.audience === 'reports-api').length;
    // The cache is per process: at most one exchange per replica, each counted as that replica's miss.
    const misses = await Promise.all(replicas.map(exchangeMisses));
    assert.ok(misses.every((m) => m <= 1), `each replica exchanged at most once: ${misses.join(', ')}`);
    assert.equal(exchangesOfLogin(), misses.reduce((a, b) => a + b, 0), 'the STS saw the replicas\' misses, no more');
    assert.ok(exchangesOfLogin() >= 1 && exchangesOfLogin() <= REPLICAS);
    assert.equal(exchanged.size, exchangesOfLogin(), 'each exchanged token is one replica\'s');
    // Repeated calls across the replicas: no more exchanges.
    const exchangedSoFar = exchangesOfLogin();
    for (let i = 0; i < 2 * REPLICAS; i++) assert.match(textOf(await call('reports_echo', { text: `again ${i}` })), /reports: again/);
    assert.equal(exchangesOfLogin(), exchangedSoFar, 'repeated calls on every replica: the STS is not asked again');
    console.log(`# token exchange: ${exchangesOfLogin()} exchange(s) at the STS for ${reports.received.filter((r) => r.rpcMethods.includes('tools/call')).length} reports calls on ${REPLICAS} replicas (per-replica misses ${misses.join('/')}): the cache is per process`);
  });

  it('elicitation and sampling: asked through one replica, answered through another', async (t) => {
    if (skipIf(t, skip)) return;
    assert.ok(loggedIn, 'the login step failed');
    for (let i = 0; i < REPLICAS; i++) {
      const elicited = await call('ask_elicit', { message: `who-${i}` });
      assert.deepEqual(elicited?.structuredContent, { action: 'accept', content: { name: `Ann for who-${i}` } });
      const sampled = await call('ask_sample', { prompt: `topic-${i}` });
      assert.equal(textOf(sampled), `sampled topic-${i}`);
    }
    const log = await logWhen((l) => hasCall(l, 'ask_sample', `topic-${REPLICAS - 1}`) && l.some((e) => e.body.includes(`sampled topic-${REPLICAS - 1}`)));
    const crossings: string[] = [];
    for (let i = 0; i < REPLICAS; i++) {
      for (const [tool, arg, answered] of [
        ['ask_elicit', 'message', (m: Record<string, any>) => m['result']?.['content']?.['name'] === `Ann for who-${i}`],
        ['ask_sample', 'prompt', (m: Record<string, any>) => m['result']?.['content']?.['text'] === `sampled topic-${i}`],
      ] as const) {
        const asked = log.find((e) => rpcOf(e)?.['params']?.['name'] === tool && String(rpcOf(e)?.['params']?.['arguments']?.[arg]).endsWith(`-${i}`));
        const answer = log.find((e) => {
          const m = rpcOf(e);
          return m !== null && m['method'] === undefined && answered(m);
        });
        assert.ok(asked !== undefined && answer !== undefined, `${tool} ${i}: the call and the client's answer are in nginx's log`);
        assert.equal(answer.status, 202, 'the answer was accepted');
        if (servedBy(asked) !== servedBy(answer)) crossings.push(`${tool} ${i}: ${servedBy(asked)} -> ${servedBy(answer)}`);
      }
    }
    assert.ok(crossings.length >= 1, 'at least one answer went through another replica than its call');
    console.log(`# server->client requests: ${crossings.length}/${2 * REPLICAS} answered through another replica than the call's (${crossings.join('; ')})`);
  });

  it('SIGKILL of the replica serving a call in flight: the call is resumed through a survivor, none retried or lost, the session and the tokens keep working', async (t) => {
    if (skipIf(t, skip)) return;
    assert.ok(loggedIn, 'the login step failed');
    const mark = { ...figures, failures: figures.failures.length };
    const exchangesBefore = sts!.requests.length;

    // A slow call (2 s); once nginx has handed it to a replica (its response headers name it) and a
    // few of its progress events have reached the client (the SDK resumes from the last event id it
    // got: without one it could only send the call again), that replica is killed.
    const from = sent.length;
    const fromAsk = ask.received.length;
    let killedAt = 0;
    const victim = waitFor(() => sent.slice(from).find((s) => s.tool === 'ask_slow' && s.upstream !== null)?.upstream, 15_000).then(async (address) => {
      const replica = replicaAt(address);
      assert.ok(replica !== undefined, `x-upstream ${address} is a replica`);
      await sleep(300);
      replica.killed = true;
      replica.cli.child.kill('SIGKILL');
      await replica.cli.exited;
      killedAt = sent.length;
      return replica;
    });
    const slow = await call('ask_slow', { steps: 20, delayMs: 100 }, 10_000);
    const killed = await victim;
    assert.equal(textOf(slow), 'done', 'the call in flight completed');
    const inFlight = figures.retried > mark.retried ? 'retried by the client' : 'resumed by the SDK (Last-Event-ID) through another replica';
    const resumeGets = sent.slice(from).filter((s) => s.resumes);
    const replays = ask.received.slice(fromAsk).filter((r) => r.method === 'GET' && r.headers['last-event-id'] !== undefined).length;

    // Keep calling, every backend, then the rest of the session's life.
    const survivors = replicas.filter((r) => !r.killed).map((r) => r.address);
    for (let i = 0; i < 8; i++) {
      for (const tool of ['profile_echo', 'reports_echo', 'ask_echo']) assert.match(textOf(await call(tool, { text: `after ${i}` })), /after/);
    }
    const tools = await client!.listTools();
    assert.ok(tools.tools.some((tool) => tool.name === 'reports_echo'));
    for (let i = 0; i < 2; i++) {
      const elicited = await call('ask_elicit', { message: `after-kill-${i}` });
      assert.deepEqual(elicited?.structuredContent, { action: 'accept', content: { name: `Ann for after-kill-${i}` } });
    }

    // The tokens: a refresh through nginx, then the new access token in the same session.
    const refreshed = await fetch(`${issuer}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: provider!.saved!.refresh_token!, client_id: provider!.client!.client_id }),
    });
    const renewed = (await refreshed.json()) as { access_token: string; refresh_token: string };
    assert.equal(refreshed.status, 200, JSON.stringify(renewed));
    assert.notEqual(renewed.access_token, provider!.saved!.access_token);
    provider!.saveTokens({ ...provider!.saved!, access_token: renewed.access_token, refresh_token: renewed.refresh_token });
    const fromSent = sent.length;
    for (let i = 0; i < 2 * REPLICAS; i++) {
      for (const tool of ['profile_echo', 'reports_echo']) assert.match(textOf(await call(tool, { text: `renewed ${i}` })), /renewed/);
    }
    assert.ok(sent.slice(fromSent).every((s) => s.status === 200), 'the renewed token is taken by the survivors');

    const sinceKill = { served: figures.served - mark.served, retried: figures.retried - mark.retried, lost: figures.lost - mark.lost };
    const log = await logWhen((l) => hasCall(l, 'reports_echo', `renewed ${2 * REPLICAS - 1}`));
    const rerouted = log.filter((e) => e.upstreams.length > 1);
    const failedAtNginx = log.filter((e) => e.status >= 500);
    const perReplica = replicas.map((r) => `${r.killed ? 'killed ' : ''}${r.address}=${log.filter((e) => servedBy(e) === r.address).length}`);
    console.log(
      `# replicas as one: ${REPLICAS} gateway processes behind nginx, SIGKILL of ${killed.address} with a call in flight (${inFlight}; ${resumeGets.length} resuming GET(s) by the SDK, ${replays} replay(s) by the backend): ` +
        `after the kill ${sinceKill.served} calls served, ${sinceKill.retried} retried, ${sinceKill.lost} lost; ` +
        `whole run ${figures.served} calls served, ${figures.retried} retried, ${figures.lost} lost, ${log.length} HTTP requests through nginx (${perReplica.join(', ')}), ` +
        `${rerouted.length} re-sent by nginx from the dead replica to another, ${failedAtNginx.length} answered 5xx to the client; ` +
        `STS exchanges ${sts!.requests.length} (${sts!.requests.length - exchangesBefore} after the kill); ${((Date.now() - startedAt) / 1000).toFixed(1)} s since the suite started`,
    );
    if (figures.failures.length > 0) console.log(`# calls that failed: ${figures.failures.join(' | ')}`);
    if (clientErrors.length > 0) console.log(`# SDK transport errors: ${clientErrors.join(' | ')}`);

    assert.equal(sinceKill.retried, 0, `no call needed a retry: ${figures.failures.slice(mark.failures).join(' | ')}`);
    assert.equal(sinceKill.lost, 0, 'no call lost');
    // The call in flight was resumed: the SDK's GET with Last-Event-ID, through a survivor, and the backend's replay.
    assert.ok(resumeGets.length >= 1 && resumeGets.every((s) => s.upstream === null || survivors.includes(s.upstream)), `the SDK resumed the call's stream through a survivor: ${resumeGets.map((s) => `${s.status} ${s.upstream}`).join(', ')}`);
    assert.ok(replays >= 1, 'the backend replayed the stream');
    assert.equal(transport!.sessionId, sessionId, 'the same session throughout');
    const initializes = log.filter((e) => rpcOf(e)?.['method'] === 'initialize' && e.status === 200);
    assert.equal(initializes.length, 1, 'one initialize: the session was never opened again');
    const servedAfterKill = sent.slice(killedAt).filter((s) => s.upstream !== null);
    assert.ok(servedAfterKill.length > 0 && servedAfterKill.every((s) => survivors.includes(s.upstream!)), `after the kill only the survivors answered: ${[...new Set(servedAfterKill.map((s) => s.upstream))].join(', ')}`);
    assert.equal(failedAtNginx.filter((e) => e.method === 'POST' && rpcOf(e)?.['method'] === 'tools/call').length, 0, 'no call was answered 5xx by nginx');
  });
});
