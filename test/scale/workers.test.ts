/**
 * `server.workers: 2`: the real `gatehouse vmcp serve` as a node:cluster primary and two workers
 * on one port, sharing the local Redis for sessions. An aggregated group of an HTTP backend (the
 * SDK fixture server) and a stdio backend (the fixture server, a child per session in each
 * worker). The official SDK client sends every request on a connection of its own
 * (`Connection: close`), so the primary's round robin hands consecutive requests to alternate
 * workers; which worker served a request is read from the access log (each line carries its
 * process's pid), and for the stdio backend from the child's own parent pid (its `inspect` tool):
 * nothing is added to the gateway's answers for the test.
 *
 *  1. both workers serve, and one MCP session opened through one worker is used through both;
 *  2. the stdio backend's session lives in one worker: a call reaching the other finds no child
 *     there, and the session heals there (a child started with the session's parameters), so
 *     every call answers, from children of both workers. (Each move starts a child: the healed
 *     backend session id replaces the one the other worker holds, core/config/README.md says
 *     what that costs and what to prefer.)
 *  3. /metrics, on the admin listener the workers share, answers the sum of every worker's
 *     (equal to the access log's count of requests, whichever worker a scrape reaches);
 *     SIGHUP to the primary reloads the file in every worker;
 *  4. a worker killed with SIGKILL is started again (logged), and the service goes on through it;
 *  5. SIGTERM to the primary drains every worker (a call in flight is answered) and exits 0: no
 *     worker and no stdio child is left.
 * The embedded authorization server with two workers (its records and the sessions in Redis, its
 * keys configured): a client registered, a login, a code, a refresh and the MCP calls with the
 * token, each request reaching the next worker. (Each worker's loopback bridge to its
 * authorization server must be its own: a cluster worker's listen is otherwise the primary's,
 * one port for every worker's bridge.)
 * The registry server with two workers on one PostgreSQL database: what one publishes, both serve.
 * And: memory session storage with two workers is refused (exit 2, the YAML path and why); SIGTERM
 * to the primary and every worker at once (systemd stops a service so) drains each worker once,
 * a call in flight answered, exit 0; a port in use fails the start (exit 1, every worker stopped).
 *
 * Without Redis the Redis parts are skipped with the reason, a failure under CI=true.
 */
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Browser } from '../auth-server/helpers/browser.ts';
import { startUpstreamIdp } from '../auth-server/helpers/upstream-idp.ts';
import { connectClient, textOf, type ConnectedClient } from '../fixtures/client.ts';
import { freePort, waitFor } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { runCli, serveCli, type ServedCli } from '../helpers/cli.ts';
import { vmcpYaml, writeConfig, type TestBackend } from '../helpers/gateway.ts';
import { fixtureBackend, processGone, waitGone } from '../helpers/stdio-backends.ts';
import { createTestDatabase } from '../registry/helpers/postgres.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';
import { skipIf, type Skip } from '../store/helpers/service.ts';

const SUITE = 'server.workers (test/scale/workers)';

/** Gateway processes still running after a test failed, or when this process exits: not left behind (their pipes would keep it alive). */
const running = new Set<ServedCli>();
const killRunning = (): void => {
  for (const cli of running) cli.child.kill('SIGKILL');
};
process.once('exit', killRunning);
after(killRunning);

function config(o: { backends: TestBackend[]; storage: string; workers?: number }): string {
  return vmcpYaml({
    backends: o.backends,
    config: `session: {storage: ${o.storage}}`,
    spec: `  server: {workers: ${o.workers ?? 2}, accessLog: true, shutdownGracePeriod: 5s, admin: {port: 0}}`,
  });
}

/** The access log's lines of MCP requests (one per request, with the pid of the worker that served it). */
function mcpLines(cli: ServedCli): { pid: number; rpc?: string; session?: string; status: number }[] {
  return cli.logs.filter((l) => l.msg === 'request' && l.route === 'mcp') as never;
}

const logged = (cli: ServedCli, msg: string): Record<string, unknown>[] => cli.logs.filter((l) => l.msg === msg);

describe(SUITE, { timeout: 120_000 }, () => {
  let redis: LocalRedis | null = null;
  let skip: Skip | null = null;
  let http: SdkServer;
  let cli: ServedCli;
  let file: string;
  let backends: TestBackend[];
  let client: ConnectedClient;
  /** The workers' pids, as the primary logged them when all were ready. */
  let workers: number[] = [];
  /** Every stdio child seen (by its `inspect`): none may outlive the gateway. */
  const children = new Set<number>();

  before(async () => {
    const local = await openLocalRedis();
    if ('skip' in local) {
      skip = local;
      return;
    }
    redis = local;
    http = await startSdkServer({ name: 'alpha', jsonResponse: true, tools: ['echo', 'slow'] });
    backends = [
      { name: 'alpha', url: http.url },
      { name: 'files', transport: fixtureBackend() },
    ];
    file = await writeConfig(config({ backends, storage: `{type: redis, redis: {addr: "${redis.config.address}", keyPrefix: "${redis.keyPrefix}"}}` }));
    cli = await serveCli('vmcp', file, ['--log-level', 'info']);
    running.add(cli);
    const ready = await waitFor(() => logged(cli, 'every worker is ready')[0], 30_000);
    workers = ready.workerPids as number[];
  });

  after(async () => {
    await client?.close().catch(() => {});
    for (const c of running) c.child.kill('SIGKILL');
    await http?.close();
    await redis?.cleanup();
  });

  /** Calls `<backend>_<tool>` (each call on a new connection) and returns its text. */
  async function call(name: string, args: Record<string, unknown> = {}): Promise<string> {
    return textOf(await client.client.callTool({ name, arguments: args }));
  }

  /** The pid of the parent of the stdio child that answered (the worker that served the call). */
  async function stdioParent(): Promise<number> {
    const facts = JSON.parse(await call('files_inspect')) as { pid: number; ppid: number };
    children.add(facts.pid);
    return facts.ppid;
  }

  it('two workers serve one port, and a session opened through one is used through both', async (t) => {
    if (skipIf(t, skip)) return;
    assert.equal(workers.length, 2);
    assert.notEqual(workers[0], workers[1]);
    assert.ok(!workers.includes(cli.child.pid!), 'the primary serves nothing itself');
    // A new connection for every request: the primary hands each one to the next worker.
    client = await connectClient(cli.url, { headers: { connection: 'close' }, waitForStandaloneStream: false });
    for (let i = 0; i < 6; i++) assert.equal(await call('alpha_echo', { text: `hi ${i}` }), `alpha: hi ${i}`);
    // The last access-log lines may still be on their way through the pipe.
    const calls = await waitFor(() => {
      const lines = mcpLines(cli).filter((l) => l.rpc === 'tools/call');
      return lines.length === 6 ? lines : null;
    });
    assert.equal(new Set(calls.map((l) => l.session)).size, 1, 'one session');
    assert.deepEqual(new Set(calls.map((l) => l.status)), new Set([200]));
    assert.deepEqual(new Set(calls.map((l) => l.pid)), new Set(workers), 'both workers served the session');
  });

  it("a stdio backend's session heals in the other worker: a child there, started with the session's parameters", async (t) => {
    if (skipIf(t, skip)) return;
    const parents = new Set<number>();
    for (let i = 0; i < 4; i++) parents.add(await stdioParent());
    assert.deepEqual(parents, new Set(workers), 'children of both workers answered');
    assert.equal(await call('files_echo', { text: 'still one session' }), 'still one session');
    // The primary said so at start.
    const warned = cli.logs.filter((l) => l.level === 'warn' && l.pid === cli.child.pid && String(l.msg).startsWith('backend "files" holds a process per session'));
    assert.equal(warned.length, 1, JSON.stringify(cli.logs.filter((l) => l.level === 'warn')));
  });

  it("/metrics answers every worker's requests, summed, whichever worker a scrape reaches", async (t) => {
    if (skipIf(t, skip)) return;
    const admin = logged(cli, 'virtual MCP server listening')[0]!.admin as string;
    assert.deepEqual(new Set(logged(cli, 'virtual MCP server listening').map((l) => l.admin)), new Set([admin]), 'the workers share the admin listener');
    const answered = (): number => mcpLines(cli).filter((l) => l.status === 200).length;
    /** `gatehouse_requests_total{route="mcp",status="200"}` as one scrape, on a new connection, says. */
    const scraped = async (): Promise<number> => {
      const text = await (await fetch(new URL('/metrics', admin), { headers: { connection: 'close' } })).text();
      return Number(/^gatehouse_requests_total\{route="mcp",status="200"\} (\d+)$/m.exec(text)?.[1] ?? -1);
    };
    // Both workers served requests: a scrape of one worker alone would say fewer than the log.
    assert.ok(new Set(mcpLines(cli).map((l) => l.pid)).size === 2);
    for (let i = 0; i < 4; i++) {
      await waitFor(async () => (await scraped()) === answered(), 10_000);
    }
  });

  it('SIGHUP to the primary reloads the file in every worker', async (t) => {
    if (skipIf(t, skip)) return;
    const before = logged(cli, 'reload: the configuration is unchanged, nothing to apply').length;
    cli.child.kill('SIGHUP');
    const reloaded = await waitFor((): Record<string, unknown>[] | null => {
      const lines = logged(cli, 'reload: the configuration is unchanged, nothing to apply').slice(before);
      return lines.length >= 2 ? lines : null;
    }, 30_000);
    assert.deepEqual(new Set(reloaded.map((l) => l.pid)), new Set(workers));
  });

  it('a worker that dies is started again, logged, and serves', async (t) => {
    if (skipIf(t, skip)) return;
    const [victim, survivor] = workers as [number, number];
    process.kill(victim, 'SIGKILL');
    const restarted = await waitFor(() => logged(cli, 'worker started again and ready')[0], 30_000);
    const exited = logged(cli, 'worker exited on SIGKILL: starting it again in 100 ms');
    assert.equal(exited.length, 1, JSON.stringify(cli.logs.filter((l) => l.level === 'error')));
    assert.equal(exited[0]!.workerPid, victim);
    const replacement = restarted.workerPid as number;
    assert.ok(replacement !== victim && replacement !== survivor);
    workers = [survivor, replacement];
    const from = mcpLines(cli).length;
    for (let i = 0; i < 4; i++) assert.equal(await call('alpha_echo', { text: `after ${i}` }), `alpha: after ${i}`);
    for (let i = 0; i < 2; i++) await stdioParent();
    const served = await waitFor(() => {
      const lines = mcpLines(cli).slice(from).filter((l) => l.rpc === 'tools/call');
      return lines.length === 6 ? lines : null;
    });
    assert.deepEqual(new Set(served.map((l) => l.status)), new Set([200]));
    assert.deepEqual(new Set(served.map((l) => l.pid)), new Set(workers), 'the new worker serves the same session');
  });

  it('SIGTERM to the primary drains every worker (a call in flight completes) and exits 0, leaving no process', async (t) => {
    if (skipIf(t, skip)) return;
    const received = http.received.length;
    const slow = call('alpha_slow', { steps: 1, delayMs: 1_500 });
    // In flight: the backend has it.
    await waitFor(() => http.received.slice(received).some((r) => r.rpcMethods.includes('tools/call')), 10_000);
    const exit = cli.stop();
    assert.equal(await slow, 'done');
    assert.equal(await exit, 0);
    running.delete(cli);
    assert.equal(logged(cli, 'stopped').length, 3, 'both workers and the primary stopped');
    await waitGone([...workers, ...children]);
    await client.close({ terminate: false });
  });
});

describe(`${SUITE}: refusals, start and stop`, { timeout: 90_000 }, () => {
  it('memory session storage with two workers is refused before anything starts, naming the YAML path and why', async () => {
    const memory = await writeConfig(config({ backends: [{ name: 'alpha', url: 'http://127.0.0.1:9/mcp' }], storage: '{type: memory}' }));
    const result = await runCli(['vmcp', 'serve', '--config', memory, '--port', '0']);
    assert.equal(result.code, 2, result.stderr);
    assert.match(
      result.stderr,
      /vmcp\.yaml:\d+:\d+ VirtualMCPServer\/vmcp spec\.server\.workers: 2 workers need sessions shared between the workers, but spec\.config\.session\.storage is memory: a session opened through one worker would be unknown to the others \(404\)/,
    );
    assert.equal(result.stdout, '', 'nothing started');
  });

  it("SIGTERM to every process at once (systemd's control-group stop): each worker drains once, exit 0", async (t) => {
    const local = await openLocalRedis();
    if ('skip' in local) {
      t.skip(local.skip);
      return;
    }
    const backend = await startSdkServer({ name: 'alpha', jsonResponse: true, tools: ['slow'] });
    try {
      const both = await serveCli('vmcp', await writeConfig(config({ backends: [{ name: 'alpha', url: backend.url }], storage: `{type: redis, redis: {addr: "${local.config.address}", keyPrefix: "${local.keyPrefix}"}}` })));
      running.add(both);
      const pids = (await waitFor(() => logged(both, 'every worker is ready')[0], 30_000)).workerPids as number[];
      const c = await connectClient(both.url, { waitForStandaloneStream: false });
      const slow = c.client.callTool({ name: 'slow', arguments: { steps: 1, delayMs: 1_000 } });
      await waitFor(() => backend.received.some((r) => r.rpcMethods.includes('tools/call')), 10_000);
      for (const pid of [both.child.pid!, ...pids]) process.kill(pid, 'SIGTERM');
      assert.equal(textOf(await slow), 'done');
      assert.equal(await both.exited, 0);
      running.delete(both);
      assert.equal(logged(both, 'second signal: exiting at once').length, 0);
      await waitGone(pids);
      await c.close({ terminate: false });
    } finally {
      await backend.close();
      await local.cleanup();
    }
  });

  it('workers that cannot listen fail the start: exit 1, every worker stopped', async (t) => {
    const local = await openLocalRedis();
    if ('skip' in local) {
      t.skip(local.skip);
      return;
    }
    const taken: Server = createServer();
    taken.listen(0, '127.0.0.1');
    await once(taken, 'listening');
    try {
      const port = (taken.address() as { port: number }).port;
      const busy = await writeConfig(config({ backends: [{ name: 'alpha', url: 'http://127.0.0.1:9/mcp' }], storage: `{type: redis, redis: {addr: "${local.config.address}", keyPrefix: "${local.keyPrefix}"}}` }));
      const result = await runCli(['vmcp', 'serve', '--config', busy, '--port', String(port), '--log-format', 'json']);
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use`));
      assert.match(result.stderr, /worker \d \(pid \d+\) ended before it was ready \(exit code 1\): stopped every worker/);
      const pids = [...result.stdout.matchAll(/"pid":(\d+)/g)].map((m) => Number(m[1]));
      assert.ok(pids.every(processGone), 'no worker left');
    } finally {
      taken.close();
      await local.cleanup();
    }
  });
});

describe(`${SUITE}: the registry server`, { timeout: 60_000 }, () => {
  it('two workers on one PostgreSQL database: an entry published through one is read through both; SIGTERM exits 0', async (t) => {
    const database = await createTestDatabase();
    if ('skip' in database) {
      t.skip(database.skip);
      return;
    }
    try {
      const file = await writeConfig(
        `auth: {mode: anonymous}\nsources: [{name: internal, managed: {}}]\nregistries: [{name: default, sources: [internal]}]\n` +
          `database: {type: postgres, url: "${database.url}"}\nserver: {workers: 2, accessLog: true}\n`,
        'registry.yaml',
      );
      const registry = await serveCli('registry', file);
      running.add(registry);
      const pids = (await waitFor(() => logged(registry, 'every worker is ready')[0], 30_000)).workerPids as number[];
      const published = await fetch(new URL('/default/v0.1/publish', registry.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({ name: 'io.github.me/hello', version: '1.0.0', description: 'Says hello', remotes: [{ type: 'streamable-http', url: 'https://hello.example.com/mcp' }] }),
      });
      assert.equal(published.status, 201, await published.text());
      for (let i = 0; i < 4; i++) {
        const read = await fetch(new URL('/default/v0.1/servers/io.github.me%2Fhello/versions/latest', registry.url), { headers: { connection: 'close' } });
        assert.equal(read.status, 200);
      }
      const reads = await waitFor(() => {
        const lines = registry.logs.filter((l) => l.msg === 'request' && l.method === 'GET');
        return lines.length === 4 ? lines : null;
      });
      assert.deepEqual(new Set(reads.map((l) => l.pid)), new Set(pids), 'both workers read it');
      assert.equal(await registry.stop(), 0);
      running.delete(registry);
      await waitGone(pids);
    } finally {
      await database.drop();
    }
  });
});

describe(`${SUITE}: the embedded authorization server`, { timeout: 90_000 }, () => {
  /** Every request of the test on a new connection: consecutive ones reach alternate workers. */
  const CLOSE = { connection: 'close' };
  const REDIRECT = 'http://127.0.0.1:7779/callback';

  it('a login, its tokens and the MCP session are served through both workers', async (t) => {
    const local = await openLocalRedis();
    if ('skip' in local) {
      t.skip(local.skip);
      return;
    }
    const backend = await startSdkServer({ name: 'alpha', jsonResponse: true, tools: ['echo'] });
    const port = await freePort();
    const issuer = `http://127.0.0.1:${port}`;
    const idp = await startUpstreamIdp({ user: { sub: 'worker-user' }, redirectUri: `${issuer}/oauth/callback`, clientSecret: 'corp-secret' });
    try {
      const signing = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
      const redis = (prefix: string): string => `{type: redis, redis: {addr: "${local.config.address}", keyPrefix: "${local.keyPrefix}${prefix}"}}`;
      const yaml = vmcpYaml({
        backends: [{ name: 'alpha', url: backend.url }],
        config: `session: {storage: ${redis('vmcp:')}}`,
        incomingAuth: `  incomingAuth:\n    type: oidc\n    resourceUrl: "${issuer}/mcp"\n    oidcConfig: {type: inline, inline: {issuer: "${issuer}", clientId: vmcp, audience: "${issuer}/mcp"}}`,
        spec:
          `  authServerConfig:\n    issuer: "${issuer}"\n    signingKeySecretRefs: [{name: auth, key: signing}]\n    hmacSecretRefs: [{name: auth, key: hmac}]\n` +
          `    upstreamProviders: [{name: corp, type: oidc, oidcConfig: {issuerUrl: "${idp.issuer}", clientId: gatehouse, clientSecretRef: {name: auth, key: corp}, scopes: [openid]}}]\n` +
          `    storage: ${redis('auth:')}\n  server: {workers: 2, accessLog: true}`,
        documents: `apiVersion: v1\nkind: Secret\nmetadata: {name: auth}\nstringData:\n  corp: corp-secret\n  hmac: "${randomBytes(32).toString('base64url')}"\n  signing: |\n${signing.trim().split('\n').map((l) => `    ${l}`).join('\n')}`,
      });
      const cli = await serveCli('vmcp', await writeConfig(yaml), ['--port', String(port)]);
      running.add(cli);
      const pids = (await waitFor(() => logged(cli, 'every worker is ready')[0], 30_000)).workerPids as number[];

      const registered = await fetch(`${issuer}/oauth/register`, { method: 'POST', headers: { ...CLOSE, 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT] }) });
      assert.equal(registered.status, 201);
      const clientId = ((await registered.json()) as { client_id: string }).client_id;
      const verifier = randomBytes(32).toString('base64url');
      const query = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256' });
      const visit = await new Browser(CLOSE).visit(`${issuer}/oauth/authorize?${query}`, (url) => url.href.startsWith(REDIRECT));
      const code = visit.url.searchParams.get('code');
      assert.ok(code !== null, visit.trail.join('\n'));
      const token = async (grant: Record<string, string>): Promise<{ access_token: string; refresh_token: string }> => {
        const res = await fetch(`${issuer}/oauth/token`, { method: 'POST', headers: { ...CLOSE, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ client_id: clientId, ...grant }) });
        const body = (await res.json()) as { access_token: string; refresh_token: string };
        assert.equal(res.status, 200, JSON.stringify(body));
        return body;
      };
      const first = await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier });
      const renewed = await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token });

      const c = await connectClient(cli.url, { headers: { ...CLOSE, authorization: `Bearer ${renewed.access_token}` }, waitForStandaloneStream: false });
      for (let i = 0; i < 4; i++) assert.equal(textOf(await c.client.callTool({ name: 'echo', arguments: { text: `t${i}` } })), `alpha: t${i}`);
      await c.close();
      const lines = await waitFor(() => {
        const all = cli.logs.filter((l) => l.msg === 'request');
        return all.filter((l) => l.rpc === 'tools/call').length === 4 ? all : null;
      });
      assert.deepEqual(new Set(lines.filter((l) => l.route !== 'mcp').map((l) => l.pid)), new Set(pids), 'the login went through both workers');
      assert.deepEqual(new Set(lines.filter((l) => l.rpc === 'tools/call').map((l) => l.status)), new Set([200]));
      assert.deepEqual(new Set(lines.filter((l) => l.rpc === 'tools/call').map((l) => l.pid)), new Set(pids), 'the token and the session served by both');
      assert.equal(await cli.stop(), 0);
      running.delete(cli);
    } finally {
      await idp.close();
      await backend.close();
      await local.cleanup();
    }
  });
});
