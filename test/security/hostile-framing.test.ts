/**
 * Hostile HTTP framing, property-based (fast-check, fixed seeds, a time budget): request lines
 * with odd methods, targets and versions; bodies framed by Content-Length (exact, short, long,
 * repeated, conflicting, malformed) or chunked (bad sizes, extensions, trailers, no end);
 * pipelined requests and garbage; all of it split across writes at random points, and the
 * connection then ended cleanly, half-closed or reset. Against the gateway in transparent and
 * aggregated mode, each in front of real SDK servers.
 *
 * For every case: the exchange ends within 5 s, every response is well-formed and none is a 5xx,
 * nothing after a response that closes the connection, no request hidden inside a body is
 * answered, and a good request is answered afterwards. The heap grows by less than HEAP_LIMIT.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { SpawnedFixture } from '../fixtures/processes.ts';
import { describeFramingCase, exchangeOf, framingCaseArb, type FramingCase } from '../helpers/hostile-cases.ts';
import {
  assertStillServes,
  checkOutcome,
  exchange,
  headerOf,
  inflightSettles,
  MiB,
  openSession,
  requestBytes,
  sentinelBytes,
  measuredProperty,
  startBackendChild,
  startRig,
  Tally,
  type Budget,
  type Mode,
  type Rig,
} from '../helpers/hostile.ts';

const BUDGETS: Record<Mode, Budget> = {
  transparent: { seed: 0x6a7e_1901, numRuns: 1500, interruptAfterTimeLimit: 10_000 },
  aggregated: { seed: 0x6a7e_1902, numRuns: 1500, interruptAfterTimeLimit: 10_000 },
};
/** Heap growth allowed over one mode's runs (after full collections). */
const HEAP_LIMIT = 16 * MiB;
/** First statuses of the measured runs. */
let tally = new Tally();

async function runCase(rig: Rig, c: FramingCase): Promise<void> {
  const base = rig.metrics.inflight;
  const { writes, options } = exchangeOf(rig, { family: 'framing', c });
  const outcome = await exchange(rig.url, writes, options);
  const what = describeFramingCase(c);
  tally.add(outcome);
  checkOutcome(outcome, what);
  // After the sentinel the server closes (unless a GET opened its stream, which is the answer).
  if (c.ending === 'sentinel' && outcome.responses.at(-1)?.streaming !== true) assert.equal(outcome.end, 'server-closed', `the server ends the connection after the sentinel; ${what}`);
  // Nothing is answered after a response that closed the connection.
  const closing = outcome.responses.findIndex((r) => /close/i.test(headerOf(r, 'connection') ?? ''));
  assert.ok(closing === -1 || closing === outcome.responses.length - 1, `a response after "connection: close": ${outcome.responses.map((r) => r.status).join(',')}; ${what}`);
  // A request hidden inside a body whose framing is exact is body, never a request of its own.
  if (c.requests.every((r) => r.exact)) {
    for (const r of outcome.responses) assert.doesNotMatch(r.body.toString('latin1'), /smuggled-request/, `a request hidden in a body was answered; ${what}`);
  }
  await assertStillServes(rig, what);
  assert.ok(await inflightSettles(rig, base), `every request the gateway took finishes: ${rig.metrics.inflight - base} still in flight; ${what}`);
}

/** The SDK servers behind both modes (alpha alone in transparent mode). */
let backends: SpawnedFixture[];
before(async () => {
  backends = await Promise.all(['alpha', 'beta'].map(startBackendChild));
});
after(() => Promise.all(backends.map((b) => b.kill())));

for (const mode of ['transparent', 'aggregated'] as const) {
  describe(`hostile HTTP framing (${mode})`, () => {
    let rig: Rig;
    before(async () => {
      rig = await startRig(mode, { backends });
    });
    after(() => rig.stop());

    it('every case ends within the bound, answered well-formed without a 5xx, and the gateway keeps serving; the heap stays bounded', { timeout: 120_000 }, async () => {
      await measuredProperty(`hostile-framing ${mode}`, framingCaseArb(rig), (c) => runCase(rig, c), BUDGETS[mode], HEAP_LIMIT, () => (tally = new Tally()));
    });

    // ---- Counterexamples the properties found, kept as plain cases ----

    it('a DELETE sent with a 290 KB body (answered before the body is in) does not hold up the requests after it', async () => {
      // Before: the body was never read, the connection stopped being read past 64 KiB of it, and
      // the next request waited for the 65 s idle timeout (the property's 5 s bound caught it).
      const base = rig.metrics.inflight;
      const del = requestBytes('DELETE', path(rig), [['host', rig.host], ['content-type', 'application/json'], ['accept', 'application/json, text/event-stream'], ['mcp-protocol-version', '2025-11-25'], ['connection', 'x-foo']], Buffer.alloc(293_544, 0x20));
      const outcome = await exchange(rig.url, [del], { ending: { kind: 'sentinel', bytes: sentinelBytes(rig) }, methods: ['DELETE', 'GET'] });
      checkOutcome(outcome, 'DELETE with a 290 KB body, then GET /healthz');
      assert.equal(outcome.end, 'server-closed');
      const [answer, next] = outcome.responses;
      assert.ok(answer !== undefined && answer.status >= 400 && answer.status < 500, 'the DELETE (no session) refused');
      // Answered before its body was in (aggregated mode answers itself) the connection closes;
      // else the request after it is answered too.
      if (/close/i.test(headerOf(answer, 'connection') ?? '')) assert.equal(next, undefined);
      else assert.equal(next?.status, 200, 'the request after it answered');
      assert.ok(await inflightSettles(rig, base));
    });

    it('a GET stream sent with a 200 KB body ends when its client leaves', async () => {
      // Before: the unread body paused the connection, the client's leaving went unnoticed, and
      // the stream (with its stream to the backend) stayed open for good.
      const session = await openSession(rig);
      const base = rig.metrics.inflight;
      const get = requestBytes('GET', path(rig), [['host', rig.host], ['accept', 'text/event-stream'], ['mcp-session-id', session], ['mcp-protocol-version', '2025-11-25']], Buffer.alloc(200_000, 0x20));
      const outcome = await exchange(rig.url, [get], { ending: { kind: 'responses', count: 1 }, methods: ['GET'] });
      assert.equal(outcome.responses[0]?.status, 200);
      assert.equal(outcome.responses[0]?.streaming, true);
      assert.ok(await inflightSettles(rig, base, 3_000), `${rig.metrics.inflight - base} request(s) still in flight after the client left`);
    });

    it('a GET sent with a body over maxBodySize ends its connection', async () => {
      const base = rig.metrics.inflight;
      const get = requestBytes('GET', path(rig), [['host', rig.host], ['accept', 'text/event-stream'], ['mcp-session-id', await openSession(rig)], ['mcp-protocol-version', '2025-11-25']], Buffer.alloc(1.5 * MiB, 0x20));
      const outcome = await exchange(rig.url, [get], { ending: { kind: 'half-close' }, methods: ['POST'] });
      assert.equal(outcome.end, 'server-closed');
      assert.ok(await inflightSettles(rig, base, 3_000));
      await assertStillServes(rig, 'a GET with a 1.5 MiB body');
    });

    // ---- Reported, not fixed here (core/http/wire/ is being changed by others) ----

    it('requests pipelined behind a response that closes the connection are finished, even while the client keeps its side open', async () => {
      // The PUT is refused (405) before its body is read, so its answer closes the connection;
      // the DELETE pipelined behind it goes to the backend, whose answer comes after that.
      const base = rig.metrics.inflight;
      const bytes = Buffer.concat([requestBytes('PUT', path(rig), [['host', rig.host]], 'x'), requestBytes('DELETE', path(rig), [['host', rig.host], ['mcp-session-id', 'no-such-session']])]);
      const socket = await holdOpen(rig, bytes);
      try {
        assert.ok(await inflightSettles(rig, base, 2_000), `${rig.metrics.inflight - base} request(s) still in flight 2 s after the server ended the connection`);
      } finally {
        socket.destroy();
      }
    });

    it('a client that leaves is noticed while a pipelined request\'s unread body waits behind a GET stream', async () => {
      // As the property found it: a GET stream, then an OPTIONS (answered at once, held behind the
      // stream) with a 130 KB chunked body, a POST, and the closing request; the client leaves
      // once the stream is open.
      const session = await openSession(rig);
      const base = rig.metrics.inflight;
      const head = `host: ${rig.host}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-session-id: ${session}\r\nmcp-protocol-version: 2025-11-25\r\n`;
      const bytes = Buffer.from(`GET ${path(rig)} HTTP/1.1\r\n${head}content-length: 0\r\n\r\nOPTIONS ${path(rig)} HTTP/1.1\r\n${head}transfer-encoding: chunked\r\n\r\n1fe25\r\n${' '.repeat(0x1fe25)}\r\n0\r\n\r\nPOST ${path(rig)} HTTP/1.1\r\n${head}\r\n`, 'latin1');
      const outcome = await exchange(rig.url, [bytes], { ending: { kind: 'sentinel', bytes: sentinelBytes(rig) }, methods: ['GET', 'OPTIONS', 'POST'] });
      assert.equal(outcome.responses[0]?.streaming, true);
      assert.ok(await inflightSettles(rig, base, 2_000), `${rig.metrics.inflight - base} request(s) still in flight 2 s after the client left`);
    });

    it('the 400 for a malformed HEAD request carries no body', async () => {
      const head = Buffer.from(`HEAD ${path(rig)} HTTP/1.1\r\nhost: ${rig.host}\r\ntransfer-encoding: chunked\r\ncontent-length: 5\r\n\r\n0\r\n\r\n`, 'latin1');
      const outcome = await exchange(rig.url, [head], { ending: { kind: 'half-close' }, methods: ['HEAD'] });
      assert.equal(outcome.responses[0]?.status, 400);
      assert.equal(outcome.bodyAfterHead, false, `bytes after the head: ${JSON.stringify(outcome.head)}`);
    });
  });
}

/** The MCP endpoint's path. */
function path(rig: Rig): string {
  return new URL(rig.url).pathname;
}

/**
 * Writes `bytes` on a connection whose client side stays open after the server ends its own;
 * resolves once the server has ended it (or after 5 s).
 */
async function holdOpen(rig: Rig, bytes: Buffer): Promise<Socket> {
  const u = new URL(rig.url);
  const socket = connect({ port: Number(u.port), host: u.hostname, allowHalfOpen: true });
  socket.on('data', () => undefined);
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  const ended = new Promise<void>((resolve) => {
    socket.once('end', resolve);
    setTimeout(resolve, 5_000);
  });
  socket.write(bytes);
  await ended;
  return socket;
}
