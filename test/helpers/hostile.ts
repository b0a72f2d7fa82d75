/**
 * The rig of the hostile-input property tests (test/security/hostile-*.test.ts): a gateway in
 * this process, in transparent mode (one backend) or aggregated mode (two), optionally behind
 * inline OIDC, in front of real SDK servers run as child processes (so that this process's heap
 * is the gateway's and the harness's, not the backends' sessions); a raw-socket client that
 * writes bytes in pieces and reads every response with a strict HTTP parser; the checks every
 * answer must pass; and the heap after a full garbage collection.
 *
 * The properties the tests hold the gateway to, for any bytes a client sends:
 *   - the process stays up, and a good request is still answered after each case;
 *   - every exchange ends, in responses or the connection closing, within a bound (no hang);
 *   - no 5xx for a client's fault (a 502/503 naming a backend is wrong while the backend is up);
 *   - each response is well-formed HTTP, and an error with a JSON body names its problem;
 *   - the heap does not grow past a stated limit over the runs.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { connect } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { loadVmcpConfig } from '../../core/config/vmcp-config.ts';
import type { VmcpConfig } from '../../core/config/vmcp-types.ts';
import { createResponseParser, kOnBody, kOnHeadersComplete, kOnMessageComplete } from '../../core/http/parser.ts';
import { createLogger } from '../../core/observe/log.ts';
import { GatewayMetrics } from '../../core/observe/metrics.ts';
import { startVmcp, type RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { vmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';
import { spawnFixture, type SpawnedFixture } from '../fixtures/processes.ts';
import { inlineOidcYaml } from '../incoming-auth/helpers/gateway.ts';
import { KeyIssuer } from '../incoming-auth/helpers/key-issuer.ts';
import { INITIALIZE, vmcpYaml, writeConfig } from './gateway.ts';

/** How long one exchange may take before it counts as a hang. */
export const EXCHANGE_BOUND_MS = 5_000;
/**
 * The rigs' `server` section: a request left incomplete is answered 408 within ~2 s, and a stop
 * waits 1 s at most for requests still in flight.
 */
export const RIG_SPEC = '  server: {requestTimeout: 1s, maxBodySize: 1Mi, shutdownGracePeriod: 1s}';
/** The tools the backends serve: none that waits for the client or writes what it is told to. */
export const BACKEND_TOOLS = 'echo,add,fail,crash,log';
export const RESOURCE = 'http://127.0.0.1:4483/mcp';

export type Mode = 'transparent' | 'aggregated';

/** What the cases are written for: the gateway's address, the names it serves, a session of the cases and one of the good requests. */
export interface Target {
  readonly url: string;
  readonly host: string;
  /** Tool names as the client sees them (aggregated mode prefixes them). */
  readonly echoTool: string;
  /** `Authorization` value of a valid token, or null without incoming auth. */
  readonly authorization: string | null;
  /** A live 2025 session of this rig's own (initialized), for good requests only. */
  sessionId: string;
  /** A 2025 session the hostile cases use (a DELETE may end it: they then meet a 404). */
  caseSessionId: string;
}

export interface Rig extends Target {
  readonly label: string;
  readonly mode: Mode;
  readonly oidc: boolean;
  readonly gateway: RunningVmcp;
  /** The gateway's metrics: `inflight` counts the requests it has not finished. */
  readonly metrics: GatewayMetrics;
  readonly backends: SpawnedFixture[];
  stop(): Promise<void>;
}

/** Starts an SDK server child named `name` serving BACKEND_TOOLS. */
export function startBackendChild(name: string): Promise<SpawnedFixture> {
  return spawnFixture('test/fixtures/sdk-server.ts', ['--port', '0', '--name', name, '--tools', BACKEND_TOOLS]);
}

export async function startRig(mode: Mode, options: { oidc?: boolean; backends?: SpawnedFixture[] } = {}): Promise<Rig> {
  const names = mode === 'transparent' ? ['alpha'] : ['alpha', 'beta'];
  const backends = options.backends?.slice(0, names.length) ?? (await Promise.all(names.map(startBackendChild)));
  let issuer: KeyIssuer | null = null;
  if (options.oidc === true) {
    issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
  }
  const file = await writeConfig(
    vmcpYaml({
      backends: names.map((name, i) => ({ name, url: backends[i]!.url })),
      spec: RIG_SPEC,
      ...(issuer === null ? {} : { incomingAuth: inlineOidcYaml({ issuer: issuer.url, audience: RESOURCE, resourceUrl: RESOURCE }) }),
      // Health checks off: a backend marked down by a probe would turn a client's case into a 503.
      ...(mode === 'aggregated' ? { config: 'operational: {failureHandling: {healthCheckInterval: 0s}}' } : {}),
    }),
  );
  const loaded = await loadVmcpConfig(file);
  // GATEHOUSE_TEST_ENGINE=node runs the same cases on node:http (as test/helpers/gateway.ts does).
  const engine = process.env.GATEHOUSE_TEST_ENGINE;
  const config: VmcpConfig = engine === 'node' || engine === 'gatehouse' ? { ...loaded, server: { ...loaded.server, engine } } : loaded;
  const metrics = new GatewayMetrics({ processMetrics: false });
  const level = (process.env.GATEHOUSE_TEST_LOG as 'debug' | undefined) ?? 'silent';
  const gateway = await startVmcp({ config, port: 0, log: createLogger(level), builtins: vmcpBuiltins(config), metrics });
  const authorization = issuer === null ? null : `Bearer ${await issuer.mint(issuer.claims(RESOURCE, { sub: 'hostile-suite' }))}`;
  const url = gateway.url;
  const rig: Rig = {
    label: `${mode}${issuer === null ? '' : ' + oidc'}`,
    mode,
    oidc: issuer !== null,
    gateway,
    metrics,
    url,
    host: new URL(url).host,
    backends,
    echoTool: mode === 'transparent' ? 'echo' : 'alpha_echo',
    authorization,
    sessionId: '',
    caseSessionId: '',
    async stop() {
      await gateway.stop();
      if (options.backends === undefined) await Promise.all(backends.map((b) => b.kill()));
      await issuer?.close();
    },
  };
  rig.sessionId = await openSession(rig);
  rig.caseSessionId = await openSession(rig);
  return rig;
}

/** Initializes a 2025 session through the rig; its id. */
export async function openSession(rig: Target): Promise<string> {
  const auth: Record<string, string> = rig.authorization === null ? {} : { authorization: rig.authorization };
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...auth };
  const init = await fetch(rig.url, { method: 'POST', headers, body: INITIALIZE });
  const text = await init.text();
  assert.equal(init.status, 200, text);
  const id = init.headers.get('mcp-session-id');
  assert.ok(id !== null, 'the gateway gave the session an id');
  const done = await fetch(rig.url, { method: 'POST', headers: { ...headers, 'mcp-session-id': id }, body: '{"jsonrpc":"2.0","method":"notifications/initialized"}' });
  assert.equal(done.status, 202);
  return id;
}

/** The headers of a good request on a session of the rig (the cases' by default; auth included). */
export function sessionHeaders(rig: Target, sessionId = rig.caseSessionId): [string, string][] {
  const list: [string, string][] = [
    ['content-type', 'application/json'],
    ['accept', 'application/json, text/event-stream'],
    ['mcp-session-id', sessionId],
    ['mcp-protocol-version', '2025-11-25'],
  ];
  if (rig.authorization !== null) list.push(['authorization', rig.authorization]);
  return list;
}

/** One request's bytes; `headers` exactly as given, `content-length` added for a body unless `framed`. */
export function requestBytes(method: string, target: string, headers: readonly (readonly [string, string])[], body: string | Buffer = '', framed = false): Buffer {
  let head = `${method} ${target} HTTP/1.1\r\n`;
  for (const [name, value] of headers) head += `${name}: ${value}\r\n`;
  const bodyBytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  if (!framed && (bodyBytes.length > 0 || method === 'POST')) head += `content-length: ${bodyBytes.length}\r\n`;
  return Buffer.concat([Buffer.from(head + '\r\n', 'latin1'), bodyBytes]);
}

/** A well-formed request that ends the connection: what the client writes after a case. */
export function sentinelBytes(rig: Target): Buffer {
  return requestBytes('GET', '/healthz', [['host', rig.host], ['connection', 'close']]);
}

export interface ParsedResponse {
  readonly status: number;
  /** Header lines as sent: [name, value]. */
  readonly headers: [string, string][];
  readonly body: Buffer;
  /** The body is an event stream whose end was not awaited (a GET stream). */
  readonly streaming: boolean;
}

export interface Outcome {
  /** Final responses in order (1xx left out). */
  readonly responses: ParsedResponse[];
  /** How the exchange ended. */
  readonly end: 'server-closed' | 'client-done' | 'timeout';
  readonly ms: number;
  /** The response bytes did not parse as HTTP (the parser's code), or null. */
  readonly parseError: string | null;
  /** The first bytes received, for messages. */
  readonly head: string;
  /**
   * Bytes came after the head of a response to HEAD that closed the connection: the wire
   * server's 400 for a malformed request carries its JSON body even when the request was a
   * HEAD (reported; harmless, as the connection closes after it).
   */
  readonly bodyAfterHead: boolean;
}

export interface ExchangeOptions {
  /** After the writes: write `sentinel` and wait for the server to close; end our side; or reset. */
  ending: { kind: 'sentinel'; bytes: Buffer } | { kind: 'half-close' } | { kind: 'destroy' } | { kind: 'responses'; count: number };
  /** Methods of the requests in the bytes, in order, as far as known: a HEAD response has no body. */
  methods?: readonly string[];
  /** An event-stream answer to a POST may stay open (subscriptions/listen): its head is the answer. */
  streamOk?: boolean;
  /** Pause between writes (ms); 0 writes them back to back in one tick each. */
  gapMs?: number;
  timeoutMs?: number;
}

/**
 * Writes `writes` one at a time on a new connection and reads everything back with a strict
 * response parser. Ends when the server closes the connection, when the wanted responses are in
 * (`responses`), when a GET's event stream opened (its head is the answer), or at the timeout.
 */
export function exchange(url: string, writes: readonly Buffer[], options: ExchangeOptions): Promise<Outcome> {
  const u = new URL(url);
  const timeoutMs = options.timeoutMs ?? EXCHANGE_BOUND_MS;
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = connect(Number(u.port), u.hostname);
    socket.setNoDelay(true);
    const responses: ParsedResponse[] = [];
    const received: Buffer[] = [];
    let receivedBytes = 0;
    let parseError: string | null = null;
    let settled = false;
    let status = 0;
    let headers: [string, string][] = [];
    let body: Buffer[] = [];
    let streamHead = false;
    let bodyAfterHead = false;
    let closingHead = false;
    const parser = createResponseParser();
    const finish = (end: Outcome['end']): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      setImmediate(() => parser.close());
      const head = Buffer.concat(received).subarray(0, 600).toString('latin1');
      resolve({ responses, end, ms: performance.now() - started, parseError, head, bodyAfterHead });
    };
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    parser[kOnHeadersComplete] = (_major: number, _minor: number, raw: string[], _m: unknown, _u: unknown, code: number): number => {
      status = code;
      headers = [];
      for (let i = 0; i < raw.length; i += 2) headers.push([raw[i]!, raw[i + 1]!]);
      body = [];
      if (code < 200) return 0;
      const method = options.methods?.[responses.length];
      const type = headers.find(([n]) => n.toLowerCase() === 'content-type')?.[1] ?? '';
      if ((method === 'GET' || options.streamOk === true) && /text\/event-stream/i.test(type)) streamHead = true;
      closingHead = method === 'HEAD' && /close/i.test(headers.find(([n]) => n.toLowerCase() === 'connection')?.[1] ?? '');
      return method === 'HEAD' ? 1 : 0;
    };
    parser[kOnBody] = (chunk: Buffer): void => {
      body.push(Buffer.from(chunk));
    };
    parser[kOnMessageComplete] = (): void => {
      if (status < 200) return;
      responses.push({ status, headers, body: Buffer.concat(body), streaming: false });
      if (options.ending.kind === 'responses' && responses.length >= options.ending.count) setImmediate(() => finish('client-done'));
    };
    socket.on('data', (chunk: Buffer) => {
      if (receivedBytes < 4096) received.push(chunk);
      receivedBytes += chunk.length;
      if (parseError !== null || bodyAfterHead) return;
      const result = parser.execute(chunk);
      if (typeof result !== 'number') {
        if (closingHead) bodyAfterHead = true;
        else parseError = (result as { code?: string }).code ?? String(result);
        return;
      }
      if (streamHead) {
        responses.push({ status, headers, body: Buffer.concat(body), streaming: true });
        finish('client-done');
      }
    });
    socket.on('end', () => {
      if (parseError === null && !bodyAfterHead) {
        const result = parser.finish();
        if (result instanceof Error) parseError = (result as { code?: string }).code ?? result.message;
      }
      finish('server-closed');
    });
    socket.on('close', () => finish('server-closed'));
    socket.on('error', () => undefined);
    const writeAll = async (): Promise<void> => {
      for (const data of writes) {
        if (settled || socket.destroyed) return;
        if (data.length > 0) socket.write(data);
        if ((options.gapMs ?? 0) > 0) await new Promise((r) => setTimeout(r, options.gapMs));
        else await new Promise((r) => setImmediate(r));
      }
      if (settled || socket.destroyed) return;
      switch (options.ending.kind) {
        case 'sentinel':
          socket.write(options.ending.bytes);
          break;
        case 'half-close':
          socket.end();
          break;
        case 'destroy':
          socket.resetAndDestroy();
          finish('client-done');
          break;
      }
    };
    socket.once('connect', () => void writeAll());
  });
}

/** Splits `bytes` at the given fractions (0..1): the pieces a client writes one by one. */
export function splitAt(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => Math.floor(c * bytes.length)))].filter((p) => p > 0 && p < bytes.length).sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const p of points) {
    pieces.push(bytes.subarray(from, p));
    from = p;
  }
  pieces.push(bytes.subarray(from));
  return pieces;
}

export function headerOf(response: ParsedResponse, name: string): string | undefined {
  return response.headers.find(([n]) => n.toLowerCase() === name)?.[1];
}

/** Statuses that are not a server failure even though they are 5xx: a method the gateway does not implement. */
const NOT_A_FAILURE = new Set([501]);

/**
 * What every exchange must show: it ended (no hang), the bytes parsed as HTTP, no 5xx, and
 * each response is well-formed: a printable head, a JSON body that parses, an error that says
 * what was wrong, SSE events whose data is JSON.
 */
export function checkOutcome(outcome: Outcome, what: string): void {
  const context = (): string => `${what}\n  after ${Math.round(outcome.ms)} ms (${outcome.end}); received: ${JSON.stringify(outcome.head)}`;
  assert.notEqual(outcome.end, 'timeout', `no hang: the exchange must end within ${EXCHANGE_BOUND_MS} ms; ${context()}`);
  assert.equal(outcome.parseError, null, `the responses must be well-formed HTTP; ${context()}`);
  for (const response of outcome.responses) checkResponse(response, context);
}

export function checkResponse(response: ParsedResponse, context: () => string): void {
  const { status } = response;
  assert.ok(status >= 200 && status <= 599, `status ${status}; ${context()}`);
  if (status >= 500) assert.ok(NOT_A_FAILURE.has(status), `no 5xx for a client's fault: got ${status} ${response.body.toString('utf8').slice(0, 300)}; ${context()}`);
  for (const [name, value] of response.headers) {
    assert.match(name, /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, `header name ${JSON.stringify(name)}; ${context()}`);
    assert.match(value, /^[\t\x20-\x7e]*$/, `header ${name} carries only printable ASCII: ${JSON.stringify(value)}; ${context()}`);
    assert.doesNotMatch(name, /^x-injected/i, `no header injected from the request; ${context()}`);
  }
  const type = (headerOf(response, 'content-type') ?? '').toLowerCase();
  const text = response.body.toString('utf8');
  if (type.startsWith('application/json') && response.body.length > 0) {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      assert.fail(`a JSON body that does not parse: ${JSON.stringify(text.slice(0, 300))}; ${context()}`);
    }
    if (status >= 400) assert.ok(clearError(json), `an error body names its problem: ${text.slice(0, 300)}; ${context()}`);
  } else if (type.startsWith('text/event-stream')) {
    for (const event of text.split(/\r?\n\r?\n/)) {
      const data = event
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n');
      if (data === '') continue;
      assert.doesNotThrow(() => JSON.parse(data), `SSE data is JSON: ${JSON.stringify(data.slice(0, 300))}; ${context()}`);
    }
  } else if (status >= 400 && response.body.length > 0) {
    assert.fail(`an error answered with a body that is not JSON (${type || 'no content-type'}): ${JSON.stringify(text.slice(0, 300))}; ${context()}`);
  }
}

/** A JSON-RPC error (or a batch of responses holding one) with a message, or `{error, error_description}`. */
export function clearError(json: unknown): boolean {
  if (Array.isArray(json)) return json.length > 0 && json.every((m) => typeof m === 'object' && m !== null && ('result' in m || clearError(m)));
  if (typeof json !== 'object' || json === null) return false;
  const body = json as { jsonrpc?: unknown; error?: unknown; error_description?: unknown };
  if (body.jsonrpc === '2.0') {
    const error = body.error as { code?: unknown; message?: unknown } | undefined;
    return typeof error === 'object' && error !== null && Number.isInteger(error.code) && typeof error.message === 'string' && error.message.length > 0;
  }
  return typeof body.error === 'string' && typeof body.error_description === 'string' && body.error_description.length > 0;
}

/** The JSON-RPC error of a response with a JSON body, or null. */
export function rpcErrorOf(response: ParsedResponse): { code: number; message: string; id: unknown } | null {
  try {
    const json = JSON.parse(response.body.toString('utf8')) as { id?: unknown; error?: { code: number; message: string } };
    return json.error === undefined ? null : { ...json.error, id: json.id };
  } catch {
    return null;
  }
}

/**
 * A good request still gets its answer: tools/list on the rig's own session (through the
 * backend), and the probe. Also: every backend process is still running.
 */
export async function assertStillServes(rig: Target & { readonly backends?: readonly SpawnedFixture[] }, what: string): Promise<void> {
  for (const backend of rig.backends ?? []) assert.equal(backend.child.exitCode, null, `backend ${backend.url} is still running; after ${what}`);
  const body = `{"jsonrpc":"2.0","id":"good","method":"tools/list"}`;
  const outcome = await exchange(rig.url, [requestBytes('POST', new URL(rig.url).pathname, [['host', rig.host], ...sessionHeaders(rig, rig.sessionId), ['connection', 'close']], body)], { ending: { kind: 'responses', count: 1 } });
  const answer = outcome.responses[0];
  assert.ok(answer !== undefined, `a good request is answered after ${what}: ${outcome.end} ${JSON.stringify(outcome.head)}`);
  assert.equal(answer.status, 200, `a good request is answered 200 after ${what}: ${answer.body.toString().slice(0, 300)}`);
  assert.match(answer.body.toString(), new RegExp(`"${rig.echoTool}"`), `the tools are listed after ${what}`);
}

/**
 * Every request the gateway took finishes once its client is gone: its count of requests in
 * flight is back to `base` within `withinMs` (a request it never finishes holds its connection,
 * its context and the shutdown's grace period).
 */
export async function inflightSettles(rig: Rig, base: number, withinMs = 2_000): Promise<boolean> {
  const deadline = performance.now() + withinMs;
  while (rig.metrics.inflight > base) {
    if (performance.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return true;
}

/** A full garbage collection without --expose-gc on the command line (set per file, at run time). */
let gcFunction: (() => void) | null = null;
export function fullGc(): void {
  if (gcFunction === null) {
    setFlagsFromString('--expose-gc');
    gcFunction = runInNewContext('gc') as () => void;
  }
  gcFunction();
}

/** heapUsed after letting timers and sockets settle and two full collections. */
export async function settledHeap(idleMs = 300): Promise<number> {
  await new Promise((r) => setTimeout(r, idleMs));
  fullGc();
  await new Promise((r) => setImmediate(r));
  fullGc();
  return process.memoryUsage().heapUsed;
}

export const MiB = 1024 * 1024;

/** fast-check parameters of one property: a fixed seed, a number of runs, a time budget. */
export interface Budget {
  readonly seed: number;
  readonly numRuns: number;
  readonly interruptAfterTimeLimit: number;
}

/** Counts of what the cases got, printed with the run's figures (to see that the cases reach past the parser). */
export class Tally {
  readonly #counts = new Map<string, number>();

  add(outcome: Outcome): void {
    const first = outcome.responses[0];
    // The wire server's own refusals (the parser's) apart from the gateway's answers.
    const wire = first !== undefined && /malformed HTTP request|header fields too large|did not arrive in time/.test(first.body.toString('latin1'));
    const key = first === undefined ? `none/${outcome.end}` : `${first.status}${wire ? '(parser)' : ''}`;
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }

  toString(): string {
    return [...this.#counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k}:${n}`).join(' ');
  }
}

/**
 * One measured property: 20 warm-up runs (the first requests allocate the gateway's caches and
 * pools, seed ^ 0xffff), then the budgeted runs between two settled heap readings; prints the
 * figures under `label` and fails when the heap grew by `heapLimit` or more. `fresh` gives the
 * tally the cases count into from then on.
 */
export async function measuredProperty<C>(
  label: string,
  arbitrary: fc.Arbitrary<C>,
  run: (c: C) => Promise<void>,
  budget: Budget,
  heapLimit: number,
  fresh: () => Tally,
): Promise<void> {
  await fc.assert(fc.asyncProperty(arbitrary, run), { seed: budget.seed ^ 0xffff, numRuns: 20 });
  const heapBefore = await settledHeap();
  const tally = fresh();
  const started = performance.now();
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(arbitrary, async (c) => {
      runs++;
      await run(c);
    }),
    { ...budget, markInterruptAsFailure: false },
  );
  const seconds = (performance.now() - started) / 1000;
  const heapAfter = await settledHeap();
  const growth = heapAfter - heapBefore;
  console.log(
    `${label}: seed ${budget.seed}, ${runs} runs in ${seconds.toFixed(1)} s, heap ${(heapBefore / MiB).toFixed(1)} -> ${(heapAfter / MiB).toFixed(1)} MiB (${growth >= 0 ? '+' : ''}${(growth / MiB).toFixed(1)}, limit ${heapLimit / MiB}); first statuses ${tally}`,
  );
  assert.ok(growth < heapLimit, `heap grew by ${(growth / MiB).toFixed(1)} MiB over the runs`);
}
