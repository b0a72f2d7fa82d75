/**
 * The gateway processes of the aggregation and protocol generations benchmarks (run.ts, eras.ts,
 * eras-input.ts): `plugins/cli/bin.mjs vmcp serve` on a generated config, ready once `/readyz`
 * answers 200, its CPU read from /proc by the caller.
 *
 * With BENCH_COMPARE (bench/load/checkout.ts), a benchmark starts a twin next to each gateway it
 * measures: the same config, the other checkout's `bin.mjs`, run from that checkout. A twin that
 * does not start, or whose first call fails, is reported as not available with the reason; this
 * checkout's gateway failing still fails the run, as it always did.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assertRunnable, fileSuffix, GATEHOUSE_BIN, REPO_ROOT, thisCheckoutOf, type Checkout } from '../load/checkout.ts';
import { profileArgs, startFailure } from '../load/gatehouse.ts';
import { cpuDeltaMicros, cpuSnapshot } from '../load/cpu.ts';
import { freePort, spawnChild, waitUntil, type ManagedChild } from '../load/process.ts';
import { runWrk } from '../load/wrk.ts';

export interface Gateway {
  readonly child: ManagedChild;
  /** Its MCP endpoint. */
  readonly url: string;
}

/**
 * Starts a gateway on `yaml` (written to `<dir>/<label>.yaml`), from this checkout or from
 * `checkout`; resolves once it is ready. A gateway that does not get ready is stopped.
 */
export async function startGateway(dir: string, label: string, yaml: string, port: number, checkout?: Checkout): Promise<Gateway> {
  const name = `${label}${fileSuffix(checkout)}`;
  const config = join(dir, `${name}.yaml`);
  writeFileSync(config, yaml);
  if (checkout !== undefined) assertRunnable(checkout);
  const child = spawnChild(`gatehouse-${name}`, process.execPath, [...profileArgs(name), checkout?.bin ?? GATEHOUSE_BIN, 'vmcp', 'serve', '--config', config, '--port', String(port), '--log-level', 'warn'], {
    cwd: checkout?.root ?? REPO_ROOT,
  });
  try {
    await waitUntil(`gatehouse ${name} ready`, async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200, 20_000, child);
  } catch (err) {
    await child.stop();
    // A twin's failure is a reason in the report; this checkout's is the run's error, whole.
    throw checkout === undefined ? err : startFailure(err, child.output());
  }
  return { child, url: `http://127.0.0.1:${port}/mcp` };
}

/** A gateway of the compared checkout, or why there is none (any more). */
export interface Twin {
  gateway: Gateway | null;
  unavailable: string | null;
}

/** The first line of an error, for a report. */
export const reasonOf = (err: unknown): string => ((err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '').trim();

/** Starts the twin of a gateway on the compared checkout: `yamlFor(port)` is the same generator. */
export async function startTwin(dir: string, label: string, yamlFor: (port: number) => string, other: Checkout): Promise<Twin> {
  try {
    const port = await freePort();
    return { gateway: await startGateway(dir, label, yamlFor(port), port, other), unavailable: null };
  } catch (err) {
    process.stderr.write(`  ${label} @ ${other.label}: not available: ${reasonOf(err)}\n`);
    return { gateway: null, unavailable: reasonOf(err) };
  }
}

/** Stops a twin's gateway after a failed measurement and keeps the reason; later rounds skip it. */
export async function retire(twin: Twin, err: unknown): Promise<void> {
  await twin.gateway?.child.stop();
  twin.gateway = null;
  twin.unavailable = reasonOf(err);
  process.stderr.write(`  twin failed: ${twin.unavailable}\n`);
}

/** a ÷ b to two decimals, or null when either is missing. */
export function thisOverOther(a: number | undefined, b: number | undefined): number | null {
  return a === undefined || b === undefined || !(b > 0) || !Number.isFinite(a) ? null : Math.round((a / b) * 100) / 100;
}

/** What a compare run's JSON says about the two checkouts. */
export function compareHeader(other: Checkout): { this: { label: string; root: string }; other: { label: string; root: string } } {
  const self = thisCheckoutOf();
  return { this: { label: self.label, root: self.root }, other: { label: other.label, root: other.root } };
}

/** One wrk run's figures for a gateway: its CPU µs per request (its process, read from /proc). */
export interface CpuFigures {
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly cpuUsPerRequest: number;
  readonly errors: number;
}

/** How long and how hard wrk drives a gateway (BENCH_DURATION, BENCH_WARMUP, BENCH_CONNECTIONS). */
const SECONDS = Number(process.env['BENCH_DURATION'] ?? 10);
const WARMUP = Number(process.env['BENCH_WARMUP'] ?? 3);
const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 32);

/** wrk sends `body` with `headers` to the gateway (after a warm-up), and the gateway's CPU per request is read. */
export async function gatewayCpu(dir: string, label: string, gateway: Gateway, headers: Record<string, string>, body: string): Promise<CpuFigures> {
  // wrk refuses -d0s: BENCH_WARMUP=0 means no warm-up, as in the load benchmark.
  if (WARMUP > 0) await runWrk({ url: gateway.url, seconds: WARMUP, connections: CONNECTIONS, threads: 1, headers, body, dir, label: `${label}-warmup` });
  const pid = gateway.child.proc.pid!;
  const before = cpuSnapshot([pid]);
  const result = await runWrk({ url: gateway.url, seconds: SECONDS, connections: CONNECTIONS, threads: 1, headers, body, dir, label });
  const cpu = cpuDeltaMicros(before, cpuSnapshot([pid]));
  const errors = result.errors.non2xx + result.errors.connect + result.errors.read + result.errors.write + result.errors.timeout;
  return { rps: Math.round(result.rps), p50Ms: result.p50Ms, p99Ms: result.p99Ms, cpuUsPerRequest: Math.round((cpu / result.requests) * 10) / 10, errors };
}
