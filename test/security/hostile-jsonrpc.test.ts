/**
 * Hostile JSON-RPC bodies, property-based (fast-check, fixed seeds, a time budget): random JSON,
 * batches (empty too), ids, methods and params of the wrong types, deep nesting, numbers JSON
 * cannot hold, keys sent twice, invalid UTF-8, and 2025 session requests and 2026-07-28
 * stateless requests whose `_meta` is hostile. Over well-formed HTTP, against the gateway in
 * transparent and aggregated mode, each in front of real SDK servers.
 *
 * For every case: one answer within 5 s, no 5xx, a 4xx is a JSON-RPC error with a message (and
 * the request's id, or null), a 2xx is JSON-RPC; a good request is answered afterwards; the heap
 * stays bounded. Then a gateway process takes 10,000 hostile requests of all three families and
 * its RSS before and after is printed.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import type { SpawnedFixture } from '../fixtures/processes.ts';
import { serveCli } from '../helpers/cli.ts';
import { vmcpYaml, writeConfig } from '../helpers/gateway.ts';
import { anyCaseArb, describeAny, describeJsonRpcCase, exchangeOf, jsonRpcCaseArb, type AnyCase, type JsonRpcCase } from '../helpers/hostile-cases.ts';
import {
  assertStillServes,
  checkOutcome,
  exchange,
  headerOf,
  inflightSettles,
  MiB,
  openSession,
  requestBytes,
  RIG_SPEC,
  sessionHeaders,
  measuredProperty,
  startBackendChild,
  startRig,
  Tally,
  type Budget,
  type Mode,
  type Outcome,
  type Rig,
  type Target,
} from '../helpers/hostile.ts';

const BUDGETS: Record<Mode, Budget> = {
  transparent: { seed: 0x150c_1901, numRuns: 1200, interruptAfterTimeLimit: 6_000 },
  aggregated: { seed: 0x150c_1902, numRuns: 1200, interruptAfterTimeLimit: 6_000 },
};
/** Heap growth allowed over one mode's runs (after full collections). */
const HEAP_LIMIT = 16 * MiB;
/** The mixed run: requests, its seed, and how many at once. */
const MIXED = { requests: Number(process.env.HOSTILE_MIXED_REQUESTS ?? 10_000), seed: 0x150c_1903, concurrency: 64 };

/** What a 2xx JSON body must be: a JSON-RPC response, or a batch of them. */
function isRpcResponse(json: unknown): boolean {
  const one = (m: unknown): boolean => typeof m === 'object' && m !== null && (m as { jsonrpc?: unknown }).jsonrpc === '2.0' && ('result' in m || 'error' in m);
  return Array.isArray(json) ? json.every(one) : one(json);
}

let tally = new Tally();

async function runCase(rig: Rig, c: JsonRpcCase): Promise<void> {
  const base = rig.metrics.inflight;
  const { writes, options } = exchangeOf(rig, { family: 'jsonrpc', c });
  const outcome = await exchange(rig.url, writes, options);
  const what = describeJsonRpcCase(c);
  tally.add(outcome);
  checkJsonRpcOutcome(outcome, c, what);
  await assertStillServes(rig, what);
  assert.ok(await inflightSettles(rig, base), `every request the gateway took finishes: ${rig.metrics.inflight - base} still in flight; ${what}`);
}

function checkJsonRpcOutcome(outcome: Outcome, c: JsonRpcCase, what: string): void {
  checkOutcome(outcome, what);
  const answer = outcome.responses[0];
  assert.ok(answer !== undefined, `the request is answered; ${what}`);
  const type = headerOf(answer, 'content-type') ?? '';
  const text = answer.body.toString('utf8');
  if (!/^application\/json/i.test(type) || text === '') return;
  const json = JSON.parse(text) as { jsonrpc?: unknown; id?: unknown; error?: { code?: unknown; message?: unknown } };
  if (answer.status >= 400) {
    // The wire server's own refusals (a head too large, say) come before the MCP endpoint.
    if (/malformed HTTP request|header fields too large/.test(text)) return;
    assert.equal(json.jsonrpc, '2.0', `a 4xx on the MCP endpoint is a JSON-RPC error: ${text.slice(0, 300)}; ${what}`);
    assert.ok(Number.isInteger(json.error?.code) && typeof json.error?.message === 'string' && json.error.message !== '', `with a code and a message: ${text.slice(0, 300)}; ${what}`);
    if (c.id !== null) assert.ok(json.id === c.id || json.id === null, `the error carries the request's id (${JSON.stringify(c.id)}) or null: ${text.slice(0, 300)}; ${what}`);
  } else {
    assert.ok(isRpcResponse(json), `a ${answer.status} JSON body is JSON-RPC: ${text.slice(0, 300)}; ${what}`);
  }
}

/** The SDK servers behind both modes (alpha alone in transparent mode). */
let backends: SpawnedFixture[];
before(async () => {
  backends = await Promise.all(['alpha', 'beta'].map(startBackendChild));
});
after(() => Promise.all(backends.map((b) => b.kill())));

for (const mode of ['transparent', 'aggregated'] as const) {
  describe(`hostile JSON-RPC bodies (${mode})`, () => {
    let rig: Rig;
    before(async () => {
      rig = await startRig(mode, { backends });
    });
    after(() => rig.stop());

    it('every case is answered within the bound with JSON-RPC, without a 5xx, and the gateway keeps serving; the heap stays bounded', { timeout: 120_000 }, async () => {
      await measuredProperty(`hostile-jsonrpc ${mode}`, jsonRpcCaseArb(rig), (c) => runCase(rig, c), BUDGETS[mode], HEAP_LIMIT, () => (tally = new Tally()));
    });

    // ---- Counterexamples the properties found, kept as plain cases ----

    it('a method named after what every object inherits is -32601 Method not found, not a 500', async () => {
      // Before, in aggregated mode: 500 internal error (a TypeError reading the list table's `constructor`).
      for (const method of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
        const body = JSON.stringify({ jsonrpc: '2.0', id: method, method, params: {} });
        const outcome = await exchange(rig.url, [requestBytes('POST', new URL(rig.url).pathname, sessionHeaders(rig, await freshSession(rig)).concat([['host', rig.host]]), body)], { ending: { kind: 'responses', count: 1 }, methods: ['POST'] });
        checkOutcome(outcome, method);
        const text = outcome.responses[0]!.body.toString();
        assert.match(text, /"code":-32601/, `${method}: ${text}`);
        assert.match(text, new RegExp(`"id":"${method}"`), `${method}: ${text}`);
      }
    });

    it('a body nested deeper than 256 levels is a 400 -32600 naming the depth, not a 500; 200 levels go through', async () => {
      // Before: 500 internal error from JSON.stringify running out of stack (the implicit session's
      // key for a 2026-07-28 request, the message written anew for the backend in aggregated mode).
      const deep = (n: number): string => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
      const meta = (caps: string): string => `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":${caps}}`;
      const path = new URL(rig.url).pathname;
      const modern = (method: string): [string, string][] => [['host', rig.host], ['content-type', 'application/json'], ['accept', 'application/json, text/event-stream'], ['mcp-protocol-version', '2026-07-28'], ['mcp-method', method]];
      const session = sessionHeaders(rig, await freshSession(rig)).concat([['host', rig.host]]);
      const refused: [string, [string, string][], string][] = [
        ['2026 tools/list, capabilities 5,000 deep', modern('tools/list'), `{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{"_meta":${meta(deep(5_000))}}}`],
        ['2026 notification, capabilities 100,000 deep', modern('notifications/'), `{"jsonrpc":"2.0","id":"x","method":"notifications/","params":{"_meta":${meta(deep(100_000))}}}`],
        ['2025 tools/call, arguments 100,000 deep', session, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${rig.echoTool}","arguments":${deep(100_000)}}}`],
        ['a batch 200,000 deep', session, '['.repeat(200_000) + ']'.repeat(200_000)],
      ];
      for (const [what, headers, body] of refused) {
        const outcome = await exchange(rig.url, [requestBytes('POST', path, headers, body)], { ending: { kind: 'responses', count: 1 }, methods: ['POST'] });
        checkOutcome(outcome, what);
        assert.equal(outcome.responses[0]?.status, 400, what);
        assert.match(outcome.responses[0]!.body.toString(), /"code":-32600.*more than 256 levels deep/, what);
      }
      const fine = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"${rig.echoTool}","arguments":{"text":"deep","extra":${deep(200)}}}}`;
      const outcome = await exchange(rig.url, [requestBytes('POST', path, session, fine)], { ending: { kind: 'responses', count: 1 }, methods: ['POST'] });
      checkOutcome(outcome, '200 levels');
      assert.equal(outcome.responses[0]?.status, 200);
      assert.match(outcome.responses[0]!.body.toString(), /: deep/);
    });
  });
}

/** A new 2025 session of the rig's (the cases' own may have been ended by a hostile DELETE). */
function freshSession(rig: Rig): Promise<string> {
  return openSession(rig);
}

/** Resident and peak resident memory of a process, from /proc (Linux). */
async function memoryOf(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
}

/** The sessions the aggregated gateway holds (its /status document). */
async function sessionsOf(url: string): Promise<number> {
  const status = (await (await fetch(new URL('/status', url))).json()) as { sessions?: number };
  return status.sessions ?? NaN;
}

describe('a gateway process under 10,000 hostile requests of every family', () => {
  it('keeps serving, answers each within the bound without a 5xx, and its RSS is printed', { timeout: 120_000, skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
    const file = await writeConfig(vmcpYaml({ backends: [{ name: 'alpha', url: backends[0]!.url }, { name: 'beta', url: backends[1]!.url }], spec: RIG_SPEC, config: 'operational: {failureHandling: {healthCheckInterval: 0s}}' }));
    const served = await serveCli('vmcp', file);
    try {
      const pid = served.child.pid!;
      const url = served.url;
      const target: Target = { url, host: new URL(url).host, echoTool: 'alpha_echo', authorization: null, sessionId: '', caseSessionId: '' };
      target.sessionId = await openSession(target);
      target.caseSessionId = await openSession(target);
      // Warm: the first requests load code and fill pools.
      for (let i = 0; i < 100; i++) await assertStillServes(target, 'warm-up');
      await new Promise((r) => setTimeout(r, 500));
      const before = await memoryOf(pid);
      const sessionsBefore = await sessionsOf(url);
      const started = performance.now();
      const statuses = new Tally();
      let done = 0;
      let failure: Error | null = null;
      for (let batch = 0; done < MIXED.requests && failure === null; batch++) {
        const cases = fc.sample(anyCaseArb(target), { seed: MIXED.seed + batch, numRuns: Math.min(500, MIXED.requests - done) });
        let next = 0;
        const worker = async (): Promise<void> => {
          while (next < cases.length && failure === null) {
            const a: AnyCase = cases[next++]!;
            const { writes, options } = exchangeOf(target, a);
            const outcome = await exchange(url, writes, options);
            statuses.add(outcome);
            try {
              checkOutcome(outcome, describeAny(a));
            } catch (err) {
              failure ??= err as Error;
            }
            done++;
          }
        };
        await Promise.all(Array.from({ length: MIXED.concurrency }, worker));
        if (served.child.exitCode !== null) failure ??= new Error('the gateway process exited');
      }
      const seconds = (performance.now() - started) / 1000;
      await new Promise((r) => setTimeout(r, 1_000));
      const afterRun = await memoryOf(pid);
      const sessionsAfter = await sessionsOf(url);
      if (failure !== null) throw failure;
      await assertStillServes(target, `${MIXED.requests} hostile requests`);
      const mib = (n: number): string => (n / MiB).toFixed(1);
      console.log(
        `gateway RSS under hostile load (aggregated, 2 backends, seed ${MIXED.seed}): ${mib(before.rss)} MiB before, ${mib(afterRun.rss)} MiB after ${done} hostile requests (${MIXED.concurrency} at once, ${seconds.toFixed(1)} s; ${afterRun.rss >= before.rss ? '+' : ''}${mib(afterRun.rss - before.rss)} MiB), peak ${mib(afterRun.peak)} MiB; gateway sessions ${sessionsBefore} -> ${sessionsAfter}; first statuses ${statuses}`,
      );
      assert.equal(done, MIXED.requests);
    } finally {
      assert.equal(await served.stop(), 0, 'the gateway stops cleanly');
    }
  });
});
