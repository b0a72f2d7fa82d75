/**
 * A hostile backend next to a healthy one, through an aggregated gateway in a
 * process of its own, measured from /proc:
 *
 *  1. flood: the hostile backend answers every tools/call with one SSE event that never ends
 *     (BENCH_FLOOD_MIB, 150 MiB, as fast as the gateway reads). Hostile calls go back to back
 *     while BENCH_HEALTHY_CALLS (300) calls to the healthy backend run one after the other: their
 *     latency (p50/p99, and without the flood for reference), the gateway's RSS (sampled every
 *     100 ms) and what the hostile calls got.
 *  2. cpu: the gateway's CPU seconds over one hostile call of BENCH_CPU_MIB (64) MiB.
 *  3. silent: the time an initialize takes when one backend answers it with an SSE head and then
 *     nothing, with partialFailureMode bestEffort and fail (the client gives up at
 *     BENCH_SILENT_GIVE_UP s, 120).
 *
 * BENCH_HOSTILE_OPERATIONAL: extra `spec.config.operational` keys (YAML flow), e.g.
 * `maxBackendResponseSize: 128Mi` to let the cpu run read its 64 MiB whole (the default bound,
 * 32 MiB, stops it half-way). BENCH_HOSTILE_ONLY: flood, cpu or silent. Results: printed, and
 * bench/results/hostile[-BENCH_HOSTILE_LABEL].json.
 *
 *   node --import tsx bench/aggregate/hostile.ts
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuDeltaMicros, cpuSnapshot } from '../load/cpu.ts';
import { RESULTS_DIR } from '../load/harness.ts';
import { freePort, spawnNodeScript, stopAll, type ManagedChild } from '../load/process.ts';
import { startGateway } from './gateway.ts';
import { HEADERS, openSession } from './run.ts';

const FLOOD_MIB = Number(process.env['BENCH_FLOOD_MIB'] ?? 150);
const CPU_MIB = Number(process.env['BENCH_CPU_MIB'] ?? 64);
const CALLS = Number(process.env['BENCH_HEALTHY_CALLS'] ?? 300);
const FLOOD_SECONDS = Number(process.env['BENCH_FLOOD_SECONDS'] ?? 240);
const GIVE_UP_S = Number(process.env['BENCH_SILENT_GIVE_UP'] ?? 120);
const OPERATIONAL = process.env['BENCH_HOSTILE_OPERATIONAL'] ?? '';

function yaml(backends: { name: string; port: number }[], port: number, mode: 'bestEffort' | 'fail' = 'bestEffort'): string {
  const docs = ['apiVersion: gatehouse.dev/v1alpha1\nkind: MCPGroup\nmetadata: {name: bench}'];
  for (const b of backends) docs.push(`apiVersion: gatehouse.dev/v1alpha1\nkind: MCPServer\nmetadata: {name: ${b.name}}\nspec: {url: "http://127.0.0.1:${b.port}/mcp", groupRef: bench}`);
  docs.push(
    'apiVersion: gatehouse.dev/v1alpha1\nkind: VirtualMCPServer\nmetadata: {name: bench}\nspec:\n' +
      `  config: {groupRef: bench, operational: {${OPERATIONAL === '' ? '' : OPERATIONAL + ', '}failureHandling: {healthCheckInterval: 0s, partialFailureMode: ${mode}}}}\n` +
      `  incomingAuth: {type: anonymous, resourceUrl: "http://127.0.0.1:${port}/mcp"}\n`,
  );
  return docs.join('\n---\n') + '\n';
}

async function listening(child: ManagedChild): Promise<number> {
  const match = await child.waitForLine(/LISTENING ([\d ]+)/, 20_000);
  return Number(match[1]!.trim().split(' ')[0]);
}

function rssKiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0);
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const ms = (v: number): number => Math.round(v * 10) / 10;

/** One call, its body read to the end (and dropped but for its last 300 characters). */
async function callTool(url: string, session: string, id: number, tool: string, signal?: AbortSignal): Promise<{ ms: number; bytes: number; tail: string }> {
  const started = performance.now();
  const res = await fetch(url, { method: 'POST', signal, headers: { ...HEADERS, 'mcp-session-id': session }, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: { text: 'hi' } } }) });
  let bytes = 0;
  let tail = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.length;
    tail = (tail + Buffer.from(chunk.subarray(Math.max(0, chunk.length - 300))).toString('utf8')).slice(-300);
  }
  return { ms: performance.now() - started, bytes, tail };
}

async function flood(dir: string, healthyPort: number): Promise<Record<string, unknown>> {
  const hostile = spawnNodeScript('hostile-flood', join(import.meta.dirname, 'hostile-backend.ts'), ['--mode', 'flood', '--mib', String(FLOOD_MIB)]);
  const port = await freePort();
  const gateway = await startGateway(dir, 'flood', yaml([{ name: 'hostile', port: await listening(hostile) }, { name: 'healthy', port: healthyPort }], port), port);
  const pid = gateway.child.pid;
  const session = await openSession(gateway.url);
  const quiet: number[] = [];
  for (let i = 0; i < 100; i++) quiet.push((await callTool(gateway.url, session, 1000 + i, 'healthy_tool_001')).ms);
  const rssBefore = rssKiB(pid);
  let rssPeak = rssBefore;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssKiB(pid))), 100);
  let done = false;
  const hostileCalls: { ms: number; bytes: number; tail: string }[] = [];
  const give = AbortSignal.timeout(FLOOD_SECONDS * 1000);
  const hostileLoop = (async () => {
    for (let id = 1; !done; id++) {
      try {
        hostileCalls.push(await callTool(gateway.url, session, id, 'hostile_run', give));
      } catch (err) {
        hostileCalls.push({ ms: NaN, bytes: 0, tail: String(err) });
        break;
      }
    }
  })();
  // The hostile backend's first call is under way before the healthy calls start.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const during: number[] = [];
  const deadline = performance.now() + FLOOD_SECONDS * 1000;
  for (let i = 0; i < CALLS && performance.now() < deadline; i++) during.push((await callTool(gateway.url, session, 2000 + i, 'healthy_tool_001')).ms);
  done = true;
  await hostileLoop;
  clearInterval(sampler);
  const result = {
    floodMiB: FLOOD_MIB,
    healthyQuiet: { calls: quiet.length, p50: ms(percentile(quiet, 50)), p99: ms(percentile(quiet, 99)) },
    healthyDuringFlood: { calls: during.length, p50: ms(percentile(during, 50)), p99: ms(percentile(during, 99)), max: ms(Math.max(...during)) },
    rssMiB: { before: Math.round(rssBefore / 1024), peak: Math.round(rssPeak / 1024) },
    hostileCalls: hostileCalls.length,
    hostileCall: { ms: ms(hostileCalls[0]?.ms ?? NaN), bytesToClient: hostileCalls[0]?.bytes, tail: hostileCalls[0]?.tail.slice(-200) },
  };
  await gateway.child.stop();
  await hostile.stop();
  return result;
}

async function cpu(dir: string, healthyPort: number): Promise<Record<string, unknown>> {
  const hostile = spawnNodeScript('hostile-cpu', join(import.meta.dirname, 'hostile-backend.ts'), ['--mode', 'flood', '--mib', String(CPU_MIB)]);
  const port = await freePort();
  const gateway = await startGateway(dir, 'cpu', yaml([{ name: 'hostile', port: await listening(hostile) }, { name: 'healthy', port: healthyPort }], port), port);
  const session = await openSession(gateway.url);
  const before = cpuSnapshot([gateway.child.pid]);
  const call = await callTool(gateway.url, session, 1, 'hostile_run', AbortSignal.timeout(FLOOD_SECONDS * 1000)).catch((err: unknown) => ({ ms: NaN, bytes: 0, tail: `gave up after ${FLOOD_SECONDS} s: ${String(err)}` }));
  const seconds = cpuDeltaMicros(before, cpuSnapshot([gateway.child.pid])) / 1e6;
  const result = { mib: CPU_MIB, gatewayCpuSeconds: Math.round(seconds * 100) / 100, callMs: ms(call.ms), bytesToClient: call.bytes, tail: call.tail.slice(-200) };
  await gateway.child.stop();
  await hostile.stop();
  return result;
}

async function silent(dir: string, healthyPort: number, mode: 'bestEffort' | 'fail'): Promise<Record<string, unknown>> {
  const hostile = spawnNodeScript(`hostile-silent-${mode}`, join(import.meta.dirname, 'hostile-backend.ts'), ['--mode', 'silent']);
  const port = await freePort();
  const gateway = await startGateway(dir, `silent-${mode}`, yaml([{ name: 'silent', port: await listening(hostile) }, { name: 'healthy', port: healthyPort }], port, mode), port);
  const started = performance.now();
  let outcome: string;
  try {
    const res = await fetch(gateway.url, {
      method: 'POST',
      signal: AbortSignal.timeout(GIVE_UP_S * 1000),
      headers: HEADERS,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }),
    });
    outcome = `HTTP ${res.status}: ${(await res.text()).slice(0, 300)}`;
  } catch (err) {
    outcome = `no answer: ${(err as Error).name}`;
  }
  const result = { mode, initializeMs: ms(performance.now() - started), outcome };
  await gateway.child.stop();
  await hostile.stop();
  return result;
}

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-hostile-'));
try {
  const healthy = spawnNodeScript('healthy', join(import.meta.dirname, 'backend.ts'), ['--count', '1', '--tools', '5']);
  const healthyPort = await listening(healthy);
  const results: Record<string, unknown> = { operational: OPERATIONAL };
  const only = process.env['BENCH_HOSTILE_ONLY'];
  if (only === undefined || only === 'flood') results['flood'] = await flood(dir, healthyPort);
  if (only === undefined || only === 'cpu') results['cpu'] = await cpu(dir, healthyPort);
  if (only === undefined || only === 'silent') results['silent'] = [await silent(dir, healthyPort, 'bestEffort'), await silent(dir, healthyPort, 'fail')];
  const text = JSON.stringify(results, null, 2);
  console.log(text);
  writeFileSync(join(RESULTS_DIR, `hostile${process.env['BENCH_HOSTILE_LABEL'] ? '-' + process.env['BENCH_HOSTILE_LABEL'] : ''}.json`), text + '\n');
} finally {
  await stopAll();
}
