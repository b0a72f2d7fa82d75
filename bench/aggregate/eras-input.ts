/**
 * A request for input across eras (part of `npm run bench -- --eras-only`): a `tools/call` that
 * asks the user once (elicitation), end to end, and what the gateway adds to it. Mirrors
 * core/mcp/aggregate/input-relay.ts (a 2025 client, a 2026 backend: input_required becomes an
 * elicitation/create pushed on the call's stream, the answer goes back in a retry) and
 * parked-calls.ts (a 2026 client, a 2025 backend: the backend's pushed request parks the call
 * and reaches the client as input_required, its retry resumes it).
 *
 * Backends are the tests' SDK servers (an SDK v1 server, an SDK v2 server that speaks only
 * 2026-07-28), in this process; each gateway is transparent in front of one of them, in its own
 * process, whose CPU is measured. Clients are raw HTTP (no SDK cost on either side of the
 * comparison): per row, CONCURRENCY loops make CALLS calls after a warm-up, each timed whole.
 * At this low concurrency every request pays its own system calls: a call that asks nothing is
 * measured too, as the reference for the others.
 *
 *   direct        the client in the backend's own era, straight to the backend
 *   passthrough   the same through the gateway
 *   bridged       the client of the other era through the gateway
 *
 * With BENCH_COMPARE (bench/load/checkout.ts), each gateway has a twin from the other checkout
 * on the same config, and each of its measurements is followed by the twin's: a twin row per
 * backend (`other`), its cells the twin's figures, or why the twin did not start or broke.
 */
import { startSdkServer } from '../../test/fixtures/sdk-server.ts';
import { startSdk2Server } from '../../test/fixtures/sdk2-server.ts';
import type { Checkout } from '../load/checkout.ts';
import { cpuDeltaMicros, cpuSnapshot } from '../load/cpu.ts';
import { freePort, type ManagedChild } from '../load/process.ts';
import { retire, startGateway, startTwin, type Twin } from './gateway.ts';
import { configYaml, HEADERS } from './run.ts';

const CALLS = Number(process.env['BENCH_INPUT_CALLS'] ?? 1200);
const WARMUP_CALLS = 300;
const CONCURRENCY = 4;
const ANSWER = { action: 'accept', content: { name: 'Ann' } };
const MODERN_META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } }, 'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' } };

type Message = { id?: unknown; method?: string; result?: Record<string, unknown>; error?: unknown; params?: unknown };

/** The JSON-RPC messages of a response: its JSON body, or each SSE event's data. */
async function* messagesOf(res: Response): AsyncGenerator<Message> {
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    const text = await res.text();
    if (text.length > 0) yield JSON.parse(text) as Message;
    return;
  }
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffered.indexOf('\n\n')) !== -1) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const data = event.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
      if (data.length > 0) yield JSON.parse(data) as Message;
    }
  }
}

/** A 2025 client's session, declaring elicitation. */
async function legacySession(url: string): Promise<string> {
  const init = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: { form: {} } }, clientInfo: { name: 'bench', version: '1' } } };
  const res = await fetch(url, { method: 'POST', headers: HEADERS, body: JSON.stringify(init) });
  for await (const _ of messagesOf(res)) void _;
  const session = res.headers.get('mcp-session-id');
  if (session === null) throw new Error(`${url}: initialize gave no session (HTTP ${res.status})`);
  await (await fetch(url, { method: 'POST', headers: { ...HEADERS, 'mcp-session-id': session }, body: '{"jsonrpc":"2.0","method":"notifications/initialized"}' })).arrayBuffer();
  return session;
}

/** A 2025 client's call that is asked for input on its stream and answers with a POST. */
async function legacyCall(url: string, session: string, id: number): Promise<void> {
  const headers = { ...HEADERS, 'mcp-session-id': session };
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'elicit', arguments: { message: 'who?' } } }) });
  for await (const message of messagesOf(res)) {
    if (message.method === 'elicitation/create') {
      const answered = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: message.id, result: ANSWER }) });
      await answered.arrayBuffer();
      if (answered.status !== 202) throw new Error(`the answer got HTTP ${answered.status}`);
    } else if (message.id === id) {
      if (message.result === undefined || message.result['isError'] === true) throw new Error(`the call failed: ${JSON.stringify(message)}`);
      return;
    }
  }
  throw new Error('the stream ended without the call\'s result');
}

/** A 2025 client's call that asks nothing (the reference: what any call costs here). */
async function legacyEcho(url: string, session: string, id: number): Promise<void> {
  const res = await fetch(url, { method: 'POST', headers: { ...HEADERS, 'mcp-session-id': session }, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } }) });
  for await (const message of messagesOf(res)) if (message.id === id && message.result !== undefined) return;
  throw new Error(`no result (HTTP ${res.status})`);
}

/** A 2026 client's call that asks nothing. */
async function modernEcho(url: string, id: number): Promise<void> {
  await modernRequest(url, id, { name: 'echo', arguments: { text: 'hi' }, _meta: MODERN_META }, 'echo');
}

/** The result of a 2026 request (its only answer). */
async function modernRequest(url: string, id: number, params: Record<string, unknown>, tool = 'elicit'): Promise<Record<string, unknown>> {
  const headers = { ...HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': tool };
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params }) });
  for await (const message of messagesOf(res)) if (message.id === id && message.result !== undefined) return message.result;
  throw new Error(`no result (HTTP ${res.status})`);
}

/** A 2026 client's call: input_required, then the retry with the answer and the request state. */
async function modernCall(url: string, id: number): Promise<void> {
  const params = { name: 'elicit', arguments: { message: 'who?' }, _meta: MODERN_META };
  const first = await modernRequest(url, id, params);
  if (first['resultType'] !== 'input_required') throw new Error(`expected input_required: ${JSON.stringify(first)}`);
  const inputResponses = Object.fromEntries(Object.keys(first['inputRequests'] as Record<string, unknown>).map((key) => [key, ANSWER]));
  const retry = await modernRequest(url, id + 1, { ...params, inputResponses, ...(first['requestState'] === undefined ? {} : { requestState: first['requestState'] }) });
  if (retry['resultType'] === 'input_required' || retry['isError'] === true) throw new Error(`the retry did not complete: ${JSON.stringify(retry)}`);
}

export interface InputFigures {
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** CPU of the gateway process per call (null: straight to the backend). */
  readonly gatewayCpuUsPerCall: number | null;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Runs `call` CONCURRENCY at a time after a warm-up; latency of each, CPU of `gateway` per call. */
async function measure(call: (id: number) => Promise<void>, gateway: ManagedChild | null): Promise<InputFigures> {
  let next = 1_000;
  const loop = async (count: number, times: number[] | null): Promise<void> => {
    for (let i = 0; i < count; i++) {
      const id = (next += 10);
      const t = performance.now();
      await call(id);
      times?.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, () => loop(WARMUP_CALLS / CONCURRENCY, null)));
  const times: number[] = [];
  const before = gateway === null ? null : cpuSnapshot([gateway.proc.pid!]);
  await Promise.all(Array.from({ length: CONCURRENCY }, () => loop(CALLS / CONCURRENCY, times)));
  const cpu = before === null ? null : cpuDeltaMicros(before, cpuSnapshot([gateway!.proc.pid!]));
  times.sort((a, b) => a - b);
  const r = (v: number): number => Math.round(v * 100) / 100;
  return { p50Ms: r(percentile(times, 50)), p99Ms: r(percentile(times, 99)), gatewayCpuUsPerCall: cpu === null ? null : Math.round((cpu / times.length) * 10) / 10 };
}

/** The twin gateway's cells of a row (BENCH_COMPARE): null where it was not measured. */
export interface ComparedInput {
  readonly label: string;
  readonly plainCall: InputFigures | null;
  readonly passthrough: InputFigures | null;
  readonly bridged: InputFigures | null;
  /** Why a cell is missing: the twin did not start, or broke on that measurement (the later ones skipped). */
  readonly unavailable: string | null;
}

export interface InputRow {
  readonly backend: 'legacy (SDK v1)' | 'modern (SDK v2, 2026-07-28 only)';
  /** A call that asks nothing, in the backend's era, through the gateway: the reference. */
  readonly plainCall: InputFigures;
  readonly direct: InputFigures;
  readonly passthrough: InputFigures;
  readonly bridged: InputFigures;
  /** Only with BENCH_COMPARE. */
  readonly other?: ComparedInput;
}

/** Measures on the twin's gateway, after this checkout's same measurement; null once it is gone. */
async function measureTwin(twin: Twin | null, call: (url: string) => Promise<(id: number) => Promise<void>>): Promise<InputFigures | null> {
  if (twin?.gateway == null) return null;
  try {
    return await measure(await call(twin.gateway.url), twin.gateway.child);
  } catch (err) {
    await retire(twin, err);
    return null;
  }
}

/** Both backends, each direct, passed through and bridged; with `other`, through its twin gateways too. */
export async function runInputRoundTrips(dir: string, other: Checkout | null = null): Promise<InputRow[]> {
  const legacyBackend = await startSdkServer({ name: 'legacy', tools: ['elicit', 'echo'] });
  const modernBackend = await startSdk2Server({ name: 'modern', posture: 'modern' });
  const rows: InputRow[] = [];
  try {
    for (const [era, backend] of [['legacy', legacyBackend], ['modern', modernBackend]] as const) {
      const port = await freePort();
      const yamlFor = (gatewayPort: number): string => configYaml([{ name: era, port: Number(new URL(backend.url).port) }], gatewayPort);
      const gateway = await startGateway(dir, `eras-input-${era}`, yamlFor(port), port);
      const twin = other === null ? null : await startTwin(dir, `eras-input-${era}`, yamlFor, other);
      try {
        const own = async (url: string): Promise<(id: number) => Promise<void>> => {
          if (era === 'modern') return (id) => modernCall(url, id);
          const session = await legacySession(url);
          return (id) => legacyCall(url, session, id);
        };
        const otherEra = async (url: string): Promise<(id: number) => Promise<void>> => {
          if (era === 'legacy') return (id) => modernCall(url, id);
          const session = await legacySession(url);
          return (id) => legacyCall(url, session, id);
        };
        const plain = async (url: string): Promise<(id: number) => Promise<void>> => {
          if (era === 'modern') return (id) => modernEcho(url, id);
          const session = await legacySession(url);
          return (id) => legacyEcho(url, session, id);
        };
        const plainCall = await measure(await plain(gateway.url), gateway.child);
        const twinPlainCall = await measureTwin(twin, plain);
        const direct = await measure(await own(backend.url), null);
        const passthrough = await measure(await own(gateway.url), gateway.child);
        const twinPassthrough = await measureTwin(twin, own);
        const bridged = await measure(await otherEra(gateway.url), gateway.child);
        const twinBridged = await measureTwin(twin, otherEra);
        rows.push({
          backend: era === 'legacy' ? 'legacy (SDK v1)' : 'modern (SDK v2, 2026-07-28 only)',
          plainCall,
          direct,
          passthrough,
          bridged,
          ...(twin === null || other === null
            ? {}
            : { other: { label: other.label, plainCall: twinPlainCall, passthrough: twinPassthrough, bridged: twinBridged, unavailable: twin.unavailable } }),
        });
      } finally {
        await gateway.child.stop();
        await twin?.gateway?.child.stop();
      }
    }
  } finally {
    await legacyBackend.close();
    await modernBackend.close();
  }
  return rows;
}

/** The rows as markdown; with BENCH_COMPARE each followed by its twin's (`@ label`). */
export function inputTable(rows: readonly InputRow[], other: Checkout | null = null): string[] {
  const cell = (f: InputFigures | null): string => (f === null ? 'n/a' : `${f.p50Ms} / ${f.p99Ms}${f.gatewayCpuUsPerCall === null ? '' : ` · ${f.gatewayCpuUsPerCall} µs`}`);
  const twinRow = (r: InputRow): string[] => {
    const o = r.other;
    if (o === undefined) return [];
    const why = o.unavailable === null ? '' : ` (${o.unavailable.replace(/\|/g, '\\|')})`;
    return [`| ${r.backend} @ ${o.label}${why} | ${cell(o.plainCall)} | (the same backend) | ${cell(o.passthrough)} | ${cell(o.bridged)} |`];
  };
  const ratio = (a: InputFigures | null, b: InputFigures | null): string =>
    a?.gatewayCpuUsPerCall == null || b?.gatewayCpuUsPerCall == null || !(b.gatewayCpuUsPerCall > 0) ? 'n/a' : (a.gatewayCpuUsPerCall / b.gatewayCpuUsPerCall).toFixed(2);
  return [
    '## A request for input across eras (elicitation round trip per tools/call)',
    '',
    '| backend | a call asking nothing, through the gateway | direct, its own era | through the gateway, its own era | the other era, bridged |',
    '|---|---:|---:|---:|---:|',
    ...rows.flatMap((r) => [`| ${r.backend} | ${cell(r.plainCall)} | ${cell(r.direct)} | ${cell(r.passthrough)} | ${cell(r.bridged)} |`, ...twinRow(r)]),
    '',
    'each cell: p50 / p99 ms of the whole call · the gateway\'s CPU per call',
    ...(other === null
      ? []
      : [
          '',
          `gateway CPU per call, this checkout ÷ ${other.label} (one measurement each, back to back): ` +
            rows.map((r) => `${r.backend}: asking nothing ${ratio(r.plainCall, r.other?.plainCall ?? null)}, own era ${ratio(r.passthrough, r.other?.passthrough ?? null)}, bridged ${ratio(r.bridged, r.other?.bridged ?? null)}`).join('; '),
        ]),
    '',
    `${CALLS} calls, ${CONCURRENCY} at a time, after ${WARMUP_CALLS}; a call is the whole exchange (a 2026 call: two requests)`,
  ];
}

export const INPUT_SETUP = { calls: CALLS, concurrency: CONCURRENCY, warmup: WARMUP_CALLS };
