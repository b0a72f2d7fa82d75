/**
 * Both protocol generations on the hot path (`npm run bench -- --eras-only`; part of the full
 * run): tools/call CPU µs per request of the gateway process for a 2025 client in its session
 * and for a 2026-07-28 client (stateless, its envelope in `_meta`, the standard headers), through
 *
 *   aggregated, legacy backends    (5 of them: the modern client goes through the implicit session)
 *   aggregated, modern backends    (5: no backend session for either client)
 *   transparent, legacy backend    (2025 passes through; 2026 is bridged)
 *   transparent, modern backend    (2026 passes through; 2025 is bridged)
 *
 * in one run, BENCH_ROUNDS rounds alternating which era goes first, medians compared. Backends:
 * bench/aggregate/backend.ts (stateless, JSON) in each era. Then a request for input across
 * eras, end to end (eras-input.ts). Results: bench/results/eras.json.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuDeltaMicros, cpuSnapshot } from '../load/cpu.ts';
import { RESULTS_DIR } from '../load/harness.ts';
import { freePort, spawnNodeScript, stopAll, waitUntil, type ManagedChild } from '../load/process.ts';
import { runWrk } from '../load/wrk.ts';
import { INPUT_SETUP, inputTable, runInputRoundTrips } from './eras-input.ts';
import { configYaml, HEADERS, openSession, rpc, startGateway } from './run.ts';

const BACKENDS = 5;
const SECONDS = Number(process.env['BENCH_DURATION'] ?? 10);
const WARMUP = Number(process.env['BENCH_WARMUP'] ?? 3);
const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 32);
const ROUNDS = Math.max(1, Number(process.env['BENCH_ROUNDS'] ?? 1));
/** Only the setups whose name contains one of these (separated by |), e.g. `transparent, legacy`: a quicker loop while working on one. */
const ONLY = (process.env['BENCH_ERAS_ROWS'] ?? '').split('|').map((s) => s.trim()).filter((s) => s.length > 0);
/** `0` skips the request-for-input round trips. */
const INPUT = process.env['BENCH_ERAS_INPUT'] !== '0';

const MODERN_META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' } };

async function startBackends(era: 'legacy' | 'modern'): Promise<{ name: string; port: number }[]> {
  const child = spawnNodeScript(`${era}-backends`, join(import.meta.dirname, 'backend.ts'), ['--count', String(BACKENDS), '--tools', '50', '--era', era]);
  let ports: number[] = [];
  await waitUntil(`${era} backends listening`, async () => {
    const match = /LISTENING ([\d ]+)/.exec(child.output());
    if (match !== null) ports = match[1]!.trim().split(' ').map(Number);
    return match !== null;
  }, 20_000, child);
  return ports.map((port, i) => ({ name: `b${i}`, port }));
}

interface Figures {
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly cpuUsPerRequest: number;
  readonly errors: number;
}

/** tools/call `tool` through `gateway` for a client of `era`, measured with wrk. */
async function callCpu(dir: string, label: string, gateway: { child: ManagedChild; url: string }, tool: string, era: 'legacy' | 'modern'): Promise<Figures> {
  let headers: Record<string, string>;
  let body: string;
  if (era === 'legacy') {
    headers = { ...HEADERS, 'mcp-session-id': await openSession(gateway.url) };
    body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: tool, arguments: { text: 'hi' } } });
  } else {
    headers = { ...HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': tool };
    body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: tool, arguments: { text: 'hi' }, _meta: MODERN_META } });
  }
  const check = (await (await rpc(gateway.url, body, headers)).json()) as { result?: unknown; error?: unknown };
  if (check.result === undefined) throw new Error(`${label}: tools/call failed: ${JSON.stringify(check)}`);
  await runWrk({ url: gateway.url, seconds: WARMUP, connections: CONNECTIONS, threads: 1, headers, body, dir, label: `${label}-warmup` });
  const pid = gateway.child.proc.pid!;
  const before = cpuSnapshot([pid]);
  const result = await runWrk({ url: gateway.url, seconds: SECONDS, connections: CONNECTIONS, threads: 1, headers, body, dir, label });
  const cpu = cpuDeltaMicros(before, cpuSnapshot([pid]));
  const errors = result.errors.non2xx + result.errors.connect + result.errors.read + result.errors.write + result.errors.timeout;
  return { rps: Math.round(result.rps), p50Ms: result.p50Ms, p99Ms: result.p99Ms, cpuUsPerRequest: Math.round((cpu / result.requests) * 10) / 10, errors };
}

function median(values: readonly Figures[]): Figures {
  return [...values].sort((a, b) => a.cpuUsPerRequest - b.cpuUsPerRequest)[Math.floor((values.length - 1) / 2)]!;
}

export async function runEras(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-eras-'));
  try {
    const legacyBackends = await startBackends('legacy');
    const modernBackends = await startBackends('modern');
    const setups = [
      { name: 'aggregated, legacy backends', backends: legacyBackends, tool: 'b0_tool_001' },
      { name: 'aggregated, modern backends', backends: modernBackends, tool: 'b0_tool_001' },
      { name: 'transparent, legacy backend', backends: legacyBackends.slice(0, 1), tool: 'tool_001' },
      { name: 'transparent, modern backend', backends: modernBackends.slice(0, 1), tool: 'tool_001' },
    ].filter((setup) => ONLY.length === 0 || ONLY.some((part) => setup.name.includes(part)));
    const rows: { name: string; legacy: Figures; modern: Figures; ratio: number; rounds: { legacy: number; modern: number }[] }[] = [];
    for (const [i, setup] of setups.entries()) {
      const start = async (label: string): Promise<{ child: ManagedChild; url: string }> => {
        const port = await freePort();
        return startGateway(dir, label, configYaml(setup.backends, port), port);
      };
      // Profiled, each era gets a gateway process of its own, so that each profile is one era's.
      const profiled = (process.env['BENCH_PROFILE_DIR'] ?? '') !== '';
      const shared = profiled ? null : await start(`eras-${i}`);
      const gateways = { legacy: shared ?? (await start(`eras-${i}-legacy`)), modern: shared ?? (await start(`eras-${i}-modern`)) };
      const legacy: Figures[] = [];
      const modern: Figures[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const order: ('legacy' | 'modern')[] = round % 2 === 0 ? ['legacy', 'modern'] : ['modern', 'legacy'];
        for (const era of order) (era === 'legacy' ? legacy : modern).push(await callCpu(dir, `eras-${i}-${era}-${round}`, gateways[era], setup.tool, era));
      }
      await gateways.legacy.child.stop();
      if (gateways.modern !== gateways.legacy) await gateways.modern.child.stop();
      const l = median(legacy);
      const m = median(modern);
      rows.push({ name: setup.name, legacy: l, modern: m, ratio: Math.round((m.cpuUsPerRequest / l.cpuUsPerRequest) * 100) / 100, rounds: legacy.map((f, r) => ({ legacy: f.cpuUsPerRequest, modern: modern[r]!.cpuUsPerRequest })) });
    }
    const inputRoundTrips = INPUT ? await runInputRoundTrips(dir) : [];
    const report = { date: new Date().toISOString(), node: process.version, setup: { backends: BACKENDS, wrk: `-t1 -c${CONNECTIONS} -d${SECONDS}s`, rounds: ROUNDS, input: INPUT_SETUP }, rows, inputRoundTrips };
    // A partial run (some setups, no input rows) does not replace the full run's figures.
    writeFileSync(join(RESULTS_DIR, ONLY.length === 0 && INPUT ? 'eras.json' : 'eras-partial.json'), JSON.stringify(report, null, 2) + '\n');
    const lines = [
      '## Protocol generations',
      '',
      '| tools/call through | 2025 in-session CPU µs/req (p50 / p99 ms) | 2026-07-28 CPU µs/req (p50 / p99 ms) | 2026 ÷ 2025 |',
      '|---|---:|---:|---:|',
      ...rows.map((r) => `| ${r.name} | ${r.legacy.cpuUsPerRequest} (${r.legacy.p50Ms} / ${r.legacy.p99Ms}) | ${r.modern.cpuUsPerRequest} (${r.modern.p50Ms} / ${r.modern.p99Ms}) | ${r.ratio} |`),
      '',
      ROUNDS > 1 ? `medians of ${ROUNDS} rounds alternating which era goes first` : 'one round',
      '',
      ...(INPUT ? inputTable(inputRoundTrips) : []),
    ];
    process.stdout.write(lines.join('\n') + '\n');
  } finally {
    await stopAll();
  }
}

if (process.argv[1]?.endsWith('aggregate/eras.ts')) {
  runEras().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
