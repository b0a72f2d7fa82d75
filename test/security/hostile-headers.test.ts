/**
 * Hostile request headers, property-based (fast-check, fixed seeds, a time budget): names and
 * values with CR, LF, NUL, other controls, obs-fold, latin1 and UTF-8 bytes; the headers the
 * gateway reads (Host, Content-Type, Mcp-Session-Id, Authorization, MCP-Protocol-Version,
 * Mcp-Method, Mcp-Name, Origin) replaced or sent twice; huge headers and many headers. On a
 * request that is otherwise good (a 2025 session request or a 2026-07-28 stateless one), against
 * the gateway in transparent and aggregated mode and, once, behind inline OIDC.
 *
 * For every case: an answer within 5 s, well-formed, no 5xx, nothing injected into the response
 * head; a repeated Host, Mcp-Method, Mcp-Name, MCP-Protocol-Version (or Authorization under
 * OIDC) is never served; a good request is answered afterwards; the heap stays bounded.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SpawnedFixture } from '../fixtures/processes.ts';
import { describeHeaderCase, exchangeOf, headerCaseArb, NEVER_TWICE, type HeaderCase } from '../helpers/hostile-cases.ts';
import {
  assertStillServes,
  checkOutcome,
  exchange,
  inflightSettles,
  MiB,
  requestBytes,
  sentinelBytes,
  measuredProperty,
  startBackendChild,
  startRig,
  Tally,
  type Budget,
  type Rig,
} from '../helpers/hostile.ts';

const CONFIGS = [
  { mode: 'transparent', oidc: false, budget: { seed: 0x4ead_1901, numRuns: 1500, interruptAfterTimeLimit: 7_000 } },
  { mode: 'aggregated', oidc: false, budget: { seed: 0x4ead_1902, numRuns: 1500, interruptAfterTimeLimit: 7_000 } },
  { mode: 'transparent', oidc: true, budget: { seed: 0x4ead_1903, numRuns: 1000, interruptAfterTimeLimit: 6_000 } },
] as const satisfies readonly { mode: 'transparent' | 'aggregated'; oidc: boolean; budget: Budget }[];
/** Heap growth allowed over one configuration's runs (after full collections). */
const HEAP_LIMIT = 16 * MiB;

let tally = new Tally();

async function runCase(rig: Rig, c: HeaderCase): Promise<void> {
  const base = rig.metrics.inflight;
  // (A case that carries Upgrade waits for its answer instead of sending the closing request
  // after it, which would not be served: see exchangeOf and the Upgrade test below.)
  const { writes, options } = exchangeOf(rig, { family: 'headers', c });
  const outcome = await exchange(rig.url, writes, options);
  const what = describeHeaderCase(c);
  tally.add(outcome);
  checkOutcome(outcome, what);
  assert.ok(outcome.responses.length > 0, `the request is answered; ${what}`);
  const answer = outcome.responses[0]!;
  for (const name of c.repeated) {
    if (NEVER_TWICE.has(name) || (rig.oidc && name === 'authorization')) {
      assert.ok(answer.status >= 400, `${name} sent twice must not be served: got ${answer.status} ${answer.body.toString().slice(0, 200)}; ${what}`);
    }
  }
  await assertStillServes(rig, what);
  assert.ok(await inflightSettles(rig, base), `every request the gateway took finishes: ${rig.metrics.inflight - base} still in flight; ${what}`);
}

/** The SDK servers behind every configuration of this file (alpha alone in transparent mode). */
let backends: SpawnedFixture[];
before(async () => {
  backends = await Promise.all(['alpha', 'beta'].map(startBackendChild));
});
after(() => Promise.all(backends.map((b) => b.kill())));

for (const { mode, oidc, budget } of CONFIGS) {
  const label = `${mode}${oidc ? ' + oidc' : ''}`;
  describe(`hostile request headers (${label})`, () => {
    let rig: Rig;
    before(async () => {
      rig = await startRig(mode, { oidc, backends });
    });
    after(() => rig.stop());

    it('every case is answered within the bound, well-formed without a 5xx, repeated headers the gateway reads are refused, and it keeps serving; the heap stays bounded', { timeout: 120_000 }, async () => {
      await measuredProperty(`hostile-headers ${label}`, headerCaseArb(rig), (c) => runCase(rig, c), budget, HEAP_LIMIT, () => (tally = new Tally()));
    });

    // ---- Reported, not fixed here (core/server/gateway-server.ts is being changed by others) ----

    it('a request carrying Upgrade (without Connection: upgrade) is answered before its connection closes, though another follows it', async () => {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
      const headers: [string, string][] = [['host', rig.host], ['content-type', 'application/json'], ['accept', 'application/json, text/event-stream'], ['mcp-session-id', rig.caseSessionId], ['mcp-protocol-version', '2025-11-25'], ['upgrade', 'x']];
      if (rig.authorization !== null) headers.push(['authorization', rig.authorization]);
      const outcome = await exchange(rig.url, [requestBytes('POST', new URL(rig.url).pathname, headers, body)], { ending: { kind: 'sentinel', bytes: sentinelBytes(rig) }, methods: ['POST', 'GET'] });
      assert.equal(outcome.responses[0]?.status, 200, `the POST is answered: ${JSON.stringify(outcome.head)}`);
    });
  });
}
