/**
 * Aggregation benchmarks (`npm run bench -- --aggregate-only`; also part of the full run):
 *
 *  1. tools/list over 5 backends × 50 tools through an aggregated gateway: the first call of a
 *     session (cold: 5 backends asked, names built) and the next one (warm: the session's cache).
 *  2. tools/call CPU µs per request of the gateway process, aggregated (5 backends) against
 *     transparent (1 backend), in the same run, with wrk at BENCH_CONNECTIONS connections;
 *     BENCH_ROUNDS rounds (default 1) alternate which goes first, and the medians are compared.
 *  3. Memory per idle aggregated session with 10,000 sessions open (in this process, after GC).
 *
 * Backends: bench/aggregate/backend.ts (stateless, JSON responses), so the gateway is measured.
 * Results: printed as markdown and written to bench/results/aggregate.json.
 *
 * BENCH_COMPARE=[label=]path (another checkout, installed; bench/load/checkout.ts): part 2 also
 * measures a twin of each gateway, started from that checkout on the same config, in the same
 * rounds: A and B of one setup back to back, the whole order reversed every other round. It
 * reports that checkout's figures and this ÷ that CPU per request, and writes
 * bench/results/compare-aggregate.json instead of aggregate.json. Parts 1 (tools/list latency)
 * and 3 (memory per session: the gateway in this process, through startVmcp, so this
 * checkout's code only) are not compared: they run on this checkout alone.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { loadVmcpConfig } from '../../core/config/vmcp-config.ts';
import { createLogger } from '../../core/observe/log.ts';
import { startVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { vmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';
import { compareCheckoutOf, type Checkout } from '../load/checkout.ts';
import { RESULTS_DIR } from '../load/harness.ts';
import { freePort, spawnNodeScript, stopAll, waitUntil } from '../load/process.ts';
import { compareHeader, retire, startGateway, startTwin, thisOverOther, type Gateway, type Twin, gatewayCpu } from './gateway.ts';

const BACKENDS = 5;
const TOOLS = 50;
const LIST_SESSIONS = Number(process.env['BENCH_LIST_SESSIONS'] ?? 200);
const IDLE_SESSIONS = Number(process.env['BENCH_IDLE_SESSIONS'] ?? 10_000);
const SECONDS = Number(process.env['BENCH_DURATION'] ?? 10);
const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 32);
const ROUNDS = Math.max(1, Number(process.env['BENCH_ROUNDS'] ?? 1));

export const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });

export function configYaml(backends: { name: string; port: number }[], gatewayPort: number): string {
  const docs = ['apiVersion: gatehouse.dev/v1alpha1\nkind: MCPGroup\nmetadata: {name: bench}'];
  for (const b of backends) {
    docs.push(`apiVersion: gatehouse.dev/v1alpha1\nkind: MCPServer\nmetadata: {name: ${b.name}}\nspec: {url: "http://127.0.0.1:${b.port}/mcp", groupRef: bench}`);
  }
  docs.push(
    'apiVersion: gatehouse.dev/v1alpha1\nkind: VirtualMCPServer\nmetadata: {name: bench}\nspec:\n' +
      `  config: {groupRef: bench, session: {maxSessions: ${IDLE_SESSIONS * 2}}, operational: {failureHandling: {healthCheckInterval: 0s}}}\n` +
      `  incomingAuth: {type: anonymous, resourceUrl: "http://127.0.0.1:${gatewayPort}/mcp"}`,
  );
  return docs.join('\n---\n') + '\n';
}

export async function rpc(url: string, body: string, headers: Record<string, string> = {}): Promise<Response> {
  const res = await fetch(url, { method: 'POST', body, headers: { ...HEADERS, ...headers } });
  if (res.status >= 400) throw new Error(`${res.status} from ${url}: ${await res.text()}`);
  return res;
}

/** A new client session: initialize + initialized; returns its id. */
export async function openSession(url: string): Promise<string> {
  const res = await rpc(url, INITIALIZE);
  await res.arrayBuffer();
  const id = res.headers.get('mcp-session-id');
  if (id === null) throw new Error('no Mcp-Session-Id from initialize');
  await (await rpc(url, '{"jsonrpc":"2.0","method":"notifications/initialized"}', { 'mcp-session-id': id })).arrayBuffer();
  return id;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * tools/list latency from this process (fetch), cold and warm; and, as the floor of the warm
 * figure, a `ping` in the same session right after (the gateway answers it without a backend, a
 * ~40-byte answer): what a round trip through this client and the gateway's request path costs
 * before the list is served.
 */
async function listLatency(url: string): Promise<{ coldP50: number; coldP99: number; warmP50: number; warmP99: number; pingP50: number; tools: number }> {
  const cold: number[] = [];
  const warm: number[] = [];
  const pings: number[] = [];
  let tools = 0;
  const list = '{"jsonrpc":"2.0","id":2,"method":"tools/list"}';
  const ping = '{"jsonrpc":"2.0","id":3,"method":"ping"}';
  for (let i = 0; i < LIST_SESSIONS; i++) {
    const id = await openSession(url);
    let t = performance.now();
    const first = (await (await rpc(url, list, { 'mcp-session-id': id })).json()) as { result: { tools: unknown[] } };
    cold.push(performance.now() - t);
    t = performance.now();
    await (await rpc(url, list, { 'mcp-session-id': id })).arrayBuffer();
    warm.push(performance.now() - t);
    t = performance.now();
    await (await rpc(url, ping, { 'mcp-session-id': id })).arrayBuffer();
    pings.push(performance.now() - t);
    tools = first.result.tools.length;
    await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': id } });
  }
  const r = (v: number) => Math.round(v * 1000) / 1000;
  return { coldP50: r(percentile(cold, 50)), coldP99: r(percentile(cold, 99)), warmP50: r(percentile(warm, 50)), warmP99: r(percentile(warm, 99)), pingP50: r(percentile(pings, 50)), tools };
}

type CallFigures = Awaited<ReturnType<typeof callCpu>>;
type Setup = 'aggregated' | 'transparent';
const SETUPS: readonly Setup[] = ['aggregated', 'transparent'];
const TOOL: Record<Setup, string> = { aggregated: 'b0_tool_001', transparent: 'tool_001' };

/** The round whose CPU per request is the median (its other figures come with it). */
function medianRound(rounds: readonly CallFigures[]): CallFigures {
  return [...rounds].sort((a, b) => a.cpuUsPerRequest - b.cpuUsPerRequest)[Math.floor((rounds.length - 1) / 2)]!;
}

/** The other checkout's side of part 2: its gateways (twins) on the same configs. */
interface Compared {
  readonly checkout: Checkout;
  readonly twins: Record<Setup, Twin>;
}

interface CallRound {
  aggregated: CallFigures;
  transparent: CallFigures;
  /** The twins' figures of this round (null: not available); absent without BENCH_COMPARE. */
  other?: Record<Setup, CallFigures | null>;
}

/**
 * tools/call through both gateways, ROUNDS times, alternating which goes first so that a drift
 * of the machine weighs on both alike; with twins, each right after (or, reversed, before) its
 * gateway.
 */
async function callRounds(dir: string, gateways: Record<Setup, Gateway>, compared: Compared | null) {
  const sides = SETUPS.flatMap((setup) => (compared === null ? [{ setup, twin: false }] : [{ setup, twin: false }, { setup, twin: true }]));
  const rounds: CallRound[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const mine: Partial<Record<Setup, CallFigures>> = {};
    const theirs: Record<Setup, CallFigures | null> = { aggregated: null, transparent: null };
    for (const { setup, twin } of round % 2 === 0 ? sides : [...sides].reverse()) {
      if (!twin) {
        mine[setup] = await callCpu(dir, `${setup}-${round}`, gateways[setup], TOOL[setup]);
        continue;
      }
      const other = compared!.twins[setup];
      if (other.gateway === null) continue;
      try {
        theirs[setup] = await callCpu(dir, `${setup}-${round}@${compared!.checkout.label}`, other.gateway, TOOL[setup]);
      } catch (err) {
        await retire(other, err);
      }
    }
    rounds.push({ aggregated: mine.aggregated!, transparent: mine.transparent!, ...(compared === null ? {} : { other: theirs }) });
  }
  return { aggregated: medianRound(rounds.map((r) => r.aggregated)), transparent: medianRound(rounds.map((r) => r.transparent)), rounds };
}

/** The twins' medians over the rounds they were measured in, and this ÷ that, per setup and per round. */
function comparedCalls(compared: Compared, calls: Awaited<ReturnType<typeof callRounds>>) {
  const median = (setup: Setup): CallFigures | null => {
    const measured = calls.rounds.flatMap((r) => (r.other?.[setup] ? [r.other[setup]] : []));
    return measured.length === 0 ? null : medianRound(measured);
  };
  const other = { aggregated: median('aggregated'), transparent: median('transparent') };
  return {
    ...compareHeader(compared.checkout),
    notCompared: 'part 1 (tools/list latency) and part 3 (memory per idle session, measured in this process through startVmcp) ran on this checkout only',
    toolsCall: {
      ...other,
      cpuRatio: thisOverOther(other.aggregated?.cpuUsPerRequest, other.transparent?.cpuUsPerRequest),
      unavailable: { aggregated: compared.twins.aggregated.unavailable, transparent: compared.twins.transparent.unavailable },
      rounds: calls.rounds.map((r) => ({ aggregated: r.other?.aggregated?.cpuUsPerRequest ?? null, transparent: r.other?.transparent?.cpuUsPerRequest ?? null })),
    },
    /** This checkout's CPU µs/request ÷ the other's: of the medians, and round by round (A and B back to back). */
    thisOverOther: {
      aggregated: thisOverOther(calls.aggregated.cpuUsPerRequest, other.aggregated?.cpuUsPerRequest),
      transparent: thisOverOther(calls.transparent.cpuUsPerRequest, other.transparent?.cpuUsPerRequest),
      rounds: calls.rounds.map((r) => ({
        aggregated: thisOverOther(r.aggregated.cpuUsPerRequest, r.other?.aggregated?.cpuUsPerRequest),
        transparent: thisOverOther(r.transparent.cpuUsPerRequest, r.other?.transparent?.cpuUsPerRequest),
      })),
    },
  };
}

async function callCpu(dir: string, label: string, gateway: Gateway, tool: string) {
  const session = await openSession(gateway.url);
  const headers = { ...HEADERS, 'mcp-session-id': session };
  const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: tool, arguments: { text: 'hi' } } });
  const check = (await (await rpc(gateway.url, body, { 'mcp-session-id': session })).json()) as { result?: unknown; error?: unknown };
  if (check.result === undefined) throw new Error(`${label}: tools/call failed: ${JSON.stringify(check)}`);
  return gatewayCpu(dir, label, gateway, headers, body);
}

async function sessionMemory(yaml: string, dir: string): Promise<{ sessions: number; heapBytesPerSession: number; rssBytesPerSession: number } | { skipped: string }> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (() => void) | undefined;
  if (typeof gc !== 'function') return { skipped: 'global gc is not available' };
  const file = join(dir, 'memory.yaml');
  writeFileSync(file, yaml.replace(/resourceUrl: "[^"]+"/, 'resourceUrl: "http://127.0.0.1:1/mcp"'));
  const config = await loadVmcpConfig(file);
  const gateway = await startVmcp({ config, port: 0, log: createLogger('silent'), builtins: vmcpBuiltins(config) });
  const url = gateway.url;
  try {
    await openSession(url); // warm every code path before the baseline
    gc();
    const heap0 = process.memoryUsage().heapUsed;
    const rss0 = process.memoryUsage().rss;
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < IDLE_SESSIONS) {
          next++;
          await openSession(url);
        }
      }),
    );
    gc();
    gc();
    const heap1 = process.memoryUsage().heapUsed;
    const rss1 = process.memoryUsage().rss;
    return { sessions: IDLE_SESSIONS, heapBytesPerSession: Math.round((heap1 - heap0) / IDLE_SESSIONS), rssBytesPerSession: Math.round((rss1 - rss0) / IDLE_SESSIONS) };
  } finally {
    await gateway.stop();
  }
}

export async function runAggregate(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-aggregate-'));
  try {
    const backendProcess = spawnNodeScript('aggregate-backends', join(import.meta.dirname, 'backend.ts'), ['--count', String(BACKENDS), '--tools', String(TOOLS)]);
    let ports: number[] = [];
    await waitUntil('backends listening', async () => {
      const match = /LISTENING ([\d ]+)/.exec(backendProcess.output());
      if (match !== null) ports = match[1]!.trim().split(' ').map(Number);
      return match !== null;
    }, 20_000, backendProcess);
    const backends = ports.map((port, i) => ({ name: `b${i}`, port }));
    const aggregatedPort = await freePort();
    const transparentPort = await freePort();
    const aggregatedYaml = configYaml(backends, aggregatedPort);
    const aggregated = await startGateway(dir, 'aggregated', aggregatedYaml, aggregatedPort);
    const transparent = await startGateway(dir, 'transparent', configYaml(backends.slice(0, 1), transparentPort), transparentPort);

    const list = await listLatency(aggregated.url);
    const otherCheckout = compareCheckoutOf();
    const compared: Compared | null =
      otherCheckout === null
        ? null
        : {
            checkout: otherCheckout,
            twins: {
              aggregated: await startTwin(dir, 'aggregated', (port) => configYaml(backends, port), otherCheckout),
              transparent: await startTwin(dir, 'transparent', (port) => configYaml(backends.slice(0, 1), port), otherCheckout),
            },
          };
    const calls = await callRounds(dir, { aggregated, transparent }, compared);
    for (const twin of Object.values(compared?.twins ?? {})) await twin.gateway?.child.stop();
    const callAggregated = calls.aggregated;
    const callTransparent = calls.transparent;
    const memory = await sessionMemory(aggregatedYaml, dir);

    const report = {
      date: new Date().toISOString(),
      node: process.version,
      setup: { backends: BACKENDS, toolsPerBackend: TOOLS, listSessions: LIST_SESSIONS, wrk: `-t1 -c${CONNECTIONS} -d${SECONDS}s`, rounds: ROUNDS },
      toolsList: list,
      toolsCall: {
        aggregated: callAggregated,
        transparent: callTransparent,
        cpuRatio: Math.round((callAggregated.cpuUsPerRequest / callTransparent.cpuUsPerRequest) * 100) / 100,
        rounds: calls.rounds.map((r) => ({ aggregated: r.aggregated.cpuUsPerRequest, transparent: r.transparent.cpuUsPerRequest })),
      },
      idleSessions: memory,
      ...(compared === null ? {} : { compare: comparedCalls(compared, calls) }),
    };
    // A compare run's figures are a before/after, not this code's result: a file of their own.
    const file = join(RESULTS_DIR, compared === null ? 'aggregate.json' : 'compare-aggregate.json');
    writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
    const lines = [
      '## Aggregation',
      '',
      `tools/list over ${BACKENDS} backends × ${TOOLS} tools (${list.tools} tools merged, ${LIST_SESSIONS} sessions): cold p50 ${list.coldP50} ms (p99 ${list.coldP99} ms), warm p50 ${list.warmP50} ms (p99 ${list.warmP99} ms); a ping in the same session, p50 ${list.pingP50} ms`,
      '',
      '| tools/call | req/s | p50 ms | p99 ms | CPU µs/req | errors |',
      '|---|---:|---:|---:|---:|---:|',
      `| transparent (1 backend) | ${callTransparent.rps} | ${callTransparent.p50Ms} | ${callTransparent.p99Ms} | ${callTransparent.cpuUsPerRequest} | ${callTransparent.errors} |`,
      `| aggregated (${BACKENDS} backends) | ${callAggregated.rps} | ${callAggregated.p50Ms} | ${callAggregated.p99Ms} | ${callAggregated.cpuUsPerRequest} | ${callAggregated.errors} |`,
      ...(report.compare === undefined ? [] : compareRows(report.compare)),
      '',
      ROUNDS === 1
        ? `aggregated / transparent CPU per request: ${report.toolsCall.cpuRatio}×`
        : `aggregated / transparent CPU per request: ${report.toolsCall.cpuRatio}× (medians of ${ROUNDS} alternating rounds; per round: ${report.toolsCall.rounds.map((r) => `${r.aggregated}/${r.transparent}`).join(', ')} µs)`,
      ...(report.compare === undefined ? [] : ['', ...compareLines(report.compare)]),
      '',
      'skipped' in memory
        ? `idle sessions: skipped (${memory.skipped})`
        : `memory per idle aggregated session (${memory.sessions} open, ${BACKENDS} backend sessions each): ${memory.heapBytesPerSession} B heap, ${memory.rssBytesPerSession} B RSS`,
    ];
    process.stdout.write(lines.join('\n') + `\n\nwrote ${file}\n`);
  } finally {
    await stopAll();
  }
}

type Comparison = ReturnType<typeof comparedCalls>;

/** The twins' rows of the tools/call table. */
function compareRows(c: Comparison): string[] {
  const label = c.other.label;
  const row = (setup: Setup, name: string): string => {
    const f = c.toolsCall[setup];
    if (f === null) return `| ${name} @ ${label} | not available: ${(c.toolsCall.unavailable[setup] ?? 'no round measured').replace(/\|/g, '\\|')} | | | | |`;
    return `| ${name} @ ${label} | ${f.rps} | ${f.p50Ms} | ${f.p99Ms} | ${f.cpuUsPerRequest} | ${f.errors} |`;
  };
  return [row('transparent', 'transparent (1 backend)'), row('aggregated', `aggregated (${BACKENDS} backends)`)];
}

/** This ÷ the other checkout, per setup, of the medians and per round. */
function compareLines(c: Comparison): string[] {
  const x = (n: number | null): string => (n === null ? 'n/a' : `${n.toFixed(2)}×`);
  const perRound = (setup: Setup): string => (ROUNDS === 1 ? '' : ` (per round: ${c.thisOverOther.rounds.map((r) => r[setup]?.toFixed(2) ?? 'n/a').join(', ')})`);
  return [
    `this checkout (${c.this.label}) ÷ ${c.other.label}, CPU per request: transparent ${x(c.thisOverOther.transparent)}${perRound('transparent')}, aggregated ${x(c.thisOverOther.aggregated)}${perRound('aggregated')}; ` +
      `${c.other.label}'s aggregated / transparent ${x(c.toolsCall.cpuRatio)}`,
    `not compared: ${c.notCompared}`,
  ];
}

if (process.argv[1]?.endsWith('aggregate/run.ts')) {
  runAggregate().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
