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
 *
 * BENCH_COMPARE=[label=]path (another checkout, installed; bench/load/checkout.ts): each setup
 * also runs a twin gateway from that checkout on the same config, in the same rounds (this
 * checkout's and the twin's measurement of one era back to back, the order reversed every
 * other round), and so does each gateway of the request-for-input rows; the report adds the
 * twin's figures and this ÷ that CPU per request, written to bench/results/compare-eras.json
 * instead of eras.json / eras-partial.json. Every gateway here is a process of its own, so
 * every part is compared.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compareCheckoutOf, type Checkout } from '../load/checkout.ts';
import { RESULTS_DIR } from '../load/harness.ts';
import { freePort, spawnNodeScript, stopAll, waitUntil } from '../load/process.ts';
import { INPUT_SETUP, inputTable, runInputRoundTrips } from './eras-input.ts';
import { compareHeader, retire, startGateway, startTwin, thisOverOther, type Gateway, type Twin, gatewayCpu } from './gateway.ts';
import { configYaml, HEADERS, openSession, rpc } from './run.ts';

const BACKENDS = 5;
const SECONDS = Number(process.env['BENCH_DURATION'] ?? 10);
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

type Era = 'legacy' | 'modern';
const ERAS: readonly Era[] = ['legacy', 'modern'];

/** tools/call `tool` through `gateway` for a client of `era`, measured with wrk. */
async function callCpu(dir: string, label: string, gateway: Gateway, tool: string, era: Era): Promise<Figures> {
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
  return gatewayCpu(dir, label, gateway, headers, body);
}

function median(values: readonly Figures[]): Figures {
  return [...values].sort((a, b) => a.cpuUsPerRequest - b.cpuUsPerRequest)[Math.floor((values.length - 1) / 2)]!;
}

/** A setup's twin on the compared checkout: its medians, and this checkout's ÷ them. */
interface ComparedRow {
  readonly legacy: Figures | null;
  readonly modern: Figures | null;
  readonly ratio: number | null;
  /** Why the twin did not start, or broke (null: measured every round). */
  readonly unavailable: string | null;
  readonly rounds: { legacy: number | null; modern: number | null }[];
  /** This checkout's CPU µs/request ÷ the twin's, of the medians and round by round. */
  readonly thisOverOther: { legacy: number | null; modern: number | null; rounds: { legacy: number | null; modern: number | null }[] };
}

interface Row {
  name: string;
  legacy: Figures;
  modern: Figures;
  ratio: number;
  rounds: { legacy: number; modern: number }[];
  /** Only with BENCH_COMPARE. */
  other?: ComparedRow;
}

function comparedRow(mine: Record<Era, Figures[]>, theirs: Record<Era, (Figures | null)[]>, unavailable: string | null): ComparedRow {
  const medianOf = (era: Era): Figures | null => {
    const measured = theirs[era].filter((f): f is Figures => f !== null);
    return measured.length === 0 ? null : median(measured);
  };
  const other = { legacy: medianOf('legacy'), modern: medianOf('modern') };
  const cpu = (era: Era, round: number): number | null => theirs[era][round]?.cpuUsPerRequest ?? null;
  return {
    ...other,
    ratio: thisOverOther(other.modern?.cpuUsPerRequest, other.legacy?.cpuUsPerRequest),
    unavailable,
    rounds: mine.legacy.map((_, r) => ({ legacy: cpu('legacy', r), modern: cpu('modern', r) })),
    thisOverOther: {
      legacy: thisOverOther(median(mine.legacy).cpuUsPerRequest, other.legacy?.cpuUsPerRequest),
      modern: thisOverOther(median(mine.modern).cpuUsPerRequest, other.modern?.cpuUsPerRequest),
      rounds: mine.legacy.map((_, r) => ({
        legacy: thisOverOther(mine.legacy[r]!.cpuUsPerRequest, cpu('legacy', r) ?? undefined),
        modern: thisOverOther(mine.modern[r]!.cpuUsPerRequest, cpu('modern', r) ?? undefined),
      })),
    },
  };
}

export async function runEras(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-eras-'));
  const other = compareCheckoutOf();
  try {
    const legacyBackends = await startBackends('legacy');
    const modernBackends = await startBackends('modern');
    const setups = [
      { name: 'aggregated, legacy backends', backends: legacyBackends, tool: 'b0_tool_001' },
      { name: 'aggregated, modern backends', backends: modernBackends, tool: 'b0_tool_001' },
      { name: 'transparent, legacy backend', backends: legacyBackends.slice(0, 1), tool: 'tool_001' },
      { name: 'transparent, modern backend', backends: modernBackends.slice(0, 1), tool: 'tool_001' },
    ].filter((setup) => ONLY.length === 0 || ONLY.some((part) => setup.name.includes(part)));
    const rows: Row[] = [];
    for (const [i, setup] of setups.entries()) {
      const yamlFor = (port: number): string => configYaml(setup.backends, port);
      const start = async (label: string): Promise<Gateway> => {
        const port = await freePort();
        return startGateway(dir, label, yamlFor(port), port);
      };
      // Profiled, each era gets a gateway process of its own, so that each profile is one era's.
      const profiled = (process.env['BENCH_PROFILE_DIR'] ?? '') !== '';
      const shared = profiled ? null : await start(`eras-${i}`);
      const gateways = { legacy: shared ?? (await start(`eras-${i}-legacy`)), modern: shared ?? (await start(`eras-${i}-modern`)) };
      const twins = other === null ? null : await startTwins(dir, `eras-${i}`, yamlFor, other, profiled);
      const mine: Record<Era, Figures[]> = { legacy: [], modern: [] };
      const theirs: Record<Era, (Figures | null)[]> = { legacy: [], modern: [] };
      // This checkout's measurement of an era, then the twin's; the whole order reversed every other round.
      const sides = ERAS.flatMap((era) => (twins === null ? [{ era, twin: false }] : [{ era, twin: false }, { era, twin: true }]));
      for (let round = 0; round < ROUNDS; round++) {
        for (const { era, twin } of round % 2 === 0 ? sides : [...sides].reverse()) {
          if (!twin) {
            mine[era].push(await callCpu(dir, `eras-${i}-${era}-${round}`, gateways[era], setup.tool, era));
            continue;
          }
          const t = twins![era];
          let figures: Figures | null = null;
          if (t.gateway !== null) {
            try {
              figures = await callCpu(dir, `eras-${i}-${era}-${round}@${other!.label}`, t.gateway, setup.tool, era);
            } catch (err) {
              await retire(t, err);
            }
          }
          theirs[era].push(figures);
        }
      }
      await gateways.legacy.child.stop();
      if (gateways.modern !== gateways.legacy) await gateways.modern.child.stop();
      for (const t of new Set(Object.values(twins ?? {}))) await t.gateway?.child.stop();
      const l = median(mine.legacy);
      const m = median(mine.modern);
      rows.push({
        name: setup.name,
        legacy: l,
        modern: m,
        ratio: Math.round((m.cpuUsPerRequest / l.cpuUsPerRequest) * 100) / 100,
        rounds: mine.legacy.map((f, r) => ({ legacy: f.cpuUsPerRequest, modern: mine.modern[r]!.cpuUsPerRequest })),
        ...(twins === null ? {} : { other: comparedRow(mine, theirs, twins.legacy.unavailable ?? twins.modern.unavailable) }),
      });
    }
    const inputRoundTrips = INPUT ? await runInputRoundTrips(dir, other) : [];
    const report = {
      date: new Date().toISOString(),
      node: process.version,
      setup: { backends: BACKENDS, wrk: `-t1 -c${CONNECTIONS} -d${SECONDS}s`, rounds: ROUNDS, input: INPUT_SETUP, ...(other === null ? {} : { only: ONLY, inputRoundTrips: INPUT }) },
      ...(other === null ? {} : { compare: compareHeader(other) }),
      rows,
      inputRoundTrips,
    };
    // A partial run (some setups, no input rows) does not replace the full run's figures, nor
    // does a compare run (a before/after, not this code's result).
    const file = join(RESULTS_DIR, other !== null ? 'compare-eras.json' : ONLY.length === 0 && INPUT ? 'eras.json' : 'eras-partial.json');
    writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
    const cpuCell = (f: Figures | null): string => (f === null ? 'n/a' : `${f.cpuUsPerRequest} (${f.p50Ms} / ${f.p99Ms})`);
    const twinRow = (r: Row): string[] => {
      if (r.other === undefined || other === null) return [];
      const o = r.other;
      if (o.legacy === null && o.modern === null) return [`| ${r.name} @ ${other.label} | not available: ${(o.unavailable ?? '').replace(/\|/g, '\\|')} | | |`];
      return [`| ${r.name} @ ${other.label} | ${cpuCell(o.legacy)} | ${cpuCell(o.modern)} | ${o.ratio ?? 'n/a'} |`];
    };
    const lines = [
      '## Protocol generations',
      '',
      '| tools/call through | 2025 in-session CPU µs/req (p50 / p99 ms) | 2026-07-28 CPU µs/req (p50 / p99 ms) | 2026 ÷ 2025 |',
      '|---|---:|---:|---:|',
      ...rows.flatMap((r) => [`| ${r.name} | ${r.legacy.cpuUsPerRequest} (${r.legacy.p50Ms} / ${r.legacy.p99Ms}) | ${r.modern.cpuUsPerRequest} (${r.modern.p50Ms} / ${r.modern.p99Ms}) | ${r.ratio} |`, ...twinRow(r)]),
      '',
      ROUNDS > 1 ? `medians of ${ROUNDS} rounds alternating which era goes first` : 'one round',
      ...(other === null ? [] : ['', ...thisOverOtherTable(rows, other)]),
      '',
      ...(INPUT ? inputTable(inputRoundTrips, other) : []),
    ];
    process.stdout.write(lines.join('\n') + `\n\nwrote ${file}\n`);
  } finally {
    await stopAll();
  }
}

/** The twins of a setup's gateways: one shared by both eras, or one per era when profiled (as this checkout's). */
async function startTwins(dir: string, label: string, yamlFor: (port: number) => string, other: Checkout, perEra: boolean): Promise<Record<Era, Twin>> {
  if (!perEra) {
    const shared = await startTwin(dir, label, yamlFor, other);
    return { legacy: shared, modern: shared };
  }
  return { legacy: await startTwin(dir, `${label}-legacy`, yamlFor, other), modern: await startTwin(dir, `${label}-modern`, yamlFor, other) };
}

/** This checkout ÷ the compared one, CPU per request, per setup and era (medians, then per round). */
function thisOverOtherTable(rows: readonly Row[], other: Checkout): string[] {
  const x = (n: number | null): string => (n === null ? 'n/a' : n.toFixed(2));
  const self = compareHeader(other).this.label;
  return [
    `| this checkout (${self}) ÷ ${other.label}, CPU µs/req | 2025 client | 2026-07-28 client | per round (2025 / 2026) |`,
    '|---|---:|---:|---|',
    ...rows.map((r) => {
      const t = r.other?.thisOverOther;
      return t === undefined ? `| ${r.name} | n/a | n/a | |` : `| ${r.name} | ${x(t.legacy)} | ${x(t.modern)} | ${t.rounds.map((p) => `${x(p.legacy)} / ${x(p.modern)}`).join(', ')} |`;
    }),
  ];
}

if (process.argv[1]?.endsWith('aggregate/eras.ts')) {
  runEras().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
