/**
 * Transports benchmark (`npm run bench -- --stdio-only`; also part of the full run): the same MCP
 * server (bench/aggregate/echo-server.mjs, one `echo` tool: a minimal server by default, the SDK's
 * McpServer with BENCH_STDIO_SERVER=sdk, written to stdio-sdk.json) reached
 * through the gateway over streamable HTTP, over stdio (the gateway starts it: a process per
 * session, and `shared: true`) and over legacy HTTP+SSE.
 *
 *  1. tools/call with wrk in one session (BENCH_CONNECTIONS connections): p50/p99 and the CPU µs
 *     per request of the gateway process alone (its children, the stdio servers and the
 *     watchdog, are counted apart, as the server's CPU); in front of the server alone
 *     (transparent) and aggregated next to a second backend. wrk's connections share one
 *     session, so a process per session means one child here. BENCH_ROUNDS rounds alternate the
 *     order of the rows; medians by CPU. Ratios stdio ÷ HTTP and SSE ÷ HTTP of one run.
 *  2. Memory per idle session: BENCH_STDIO_SESSIONS (20) sessions opened (initialize, one call),
 *     then the RSS of the gateway and of every process under it, minus what they held with no
 *     session, ÷ the sessions; the gateway's own share; the backend server's for HTTP and SSE.
 *     The gateway's share is also measured as heap, with the gateway in this process (first,
 *     while this process holds nothing else), as the aggregation benchmark measures its sessions.
 *  3. A new session's initialize, timed alone (over stdio: the child spawned and initialized),
 *     p50/p99 over those sessions; and the server's bare spawn-to-initialize outside the gateway.
 *
 * Each gateway is its own process (gateway.ts); with BENCH_PROFILE_DIR each writes a V8 CPU
 * profile (`<dir>/<label>/`). `BENCH_STDIO_ROWS=transparent` (say) measures only the rows of part
 * 1 whose label holds one of the comma-separated parts; BENCH_STDIO_AGGREGATED=0 leaves out the
 * aggregated rows. BENCH_DURATION (5) and BENCH_WARMUP (2) are shorter here than the others'
 * defaults. Results: printed and written to bench/results/stdio.json.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuDeltaMicros, cpuSnapshot, machineBusyMicros, ownTreeMicros, type CpuSnapshot } from '../load/cpu.ts';
import { RESULTS_DIR } from '../load/harness.ts';
import { freePort, spawnChild, spawnNodeScript, stopAll, type ManagedChild } from '../load/process.ts';
import { runWrk } from '../load/wrk.ts';
import { startGateway, type Gateway } from './gateway.ts';
import { HEADERS, openSession } from './run.ts';
import { bareStarts, callOnce, echoCall, heapPerSession, sessionCost, type SessionCost } from './stdio-sessions.ts';

const SECONDS = Number(process.env['BENCH_DURATION'] ?? 5);
const WARMUP = Number(process.env['BENCH_WARMUP'] ?? 2);
const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 32);
const ROUNDS = Math.max(1, Number(process.env['BENCH_ROUNDS'] ?? 1));
const IDLE_STDIO_SESSIONS = Math.max(1, Number(process.env['BENCH_STDIO_SESSIONS'] ?? 20));

const ECHO_SERVER = join(import.meta.dirname, 'echo-server.mjs');
/** BENCH_STDIO_SERVER=sdk: the SDK's McpServer and transports instead of the minimal server (echo-server.mjs). */
const SDK = process.env['BENCH_STDIO_SERVER'] === 'sdk';
const SERVER_ARGS = (mode: 'stdio' | 'http' | 'sse'): string[] => [ECHO_SERVER, mode, ...(SDK ? ['--sdk'] : [])];
/** What the command line of a stdio server holds (and of no other process of the benchmark's), as /proc shows it. */
const STDIO_SERVER = `${ECHO_SERVER} stdio`;

type Transport = 'http' | 'stdio' | 'stdio-shared' | 'sse';
const TRANSPORTS: readonly Transport[] = ['http', 'stdio', 'stdio-shared', 'sse'];
type Mode = 'transparent' | 'aggregated';
const NAMES: Record<Transport, string> = { http: 'streamable HTTP', stdio: 'stdio, a process per session', 'stdio-shared': 'stdio, shared: true', sse: 'legacy HTTP+SSE' };

/** The echo server's HTTP and SSE processes, and the second backend of the aggregated rows. */
interface Servers {
  readonly http: { port: number; child: ManagedChild };
  readonly sse: { port: number; child: ManagedChild };
  readonly other: number;
}

/** The MCPServer document of the echo server over `transport`, named `echo`. */
function echoDocument(transport: Transport, servers: Servers): string {
  const head = 'apiVersion: gatehouse.dev/v1alpha1\nkind: MCPServer\nmetadata: {name: echo}\nspec:\n  groupRef: bench\n';
  if (transport === 'http') return `${head}  url: "http://127.0.0.1:${servers.http.port}/mcp"`;
  if (transport === 'sse') return `${head}  transport: sse\n  url: "http://127.0.0.1:${servers.sse.port}/sse"`;
  const shared = transport === 'stdio-shared';
  return (
    `${head}  transport: stdio\n  command: ${JSON.stringify(process.execPath)}\n  args: ${JSON.stringify(SERVER_ARGS('stdio'))}\n` +
    `  stdio: {shared: ${shared}, maxProcesses: ${IDLE_STDIO_SESSIONS + 16}, idleTimeout: 30m}`
  );
}

/** A gateway in front of the echo server alone (transparent) or next to a second backend (aggregated, tools prefixed `echo_`). */
function stdioBenchYaml(transport: Transport, mode: Mode, servers: Servers, gatewayPort: number): string {
  const docs = ['apiVersion: gatehouse.dev/v1alpha1\nkind: MCPGroup\nmetadata: {name: bench}', echoDocument(transport, servers)];
  if (mode === 'aggregated') docs.push(`apiVersion: gatehouse.dev/v1alpha1\nkind: MCPServer\nmetadata: {name: other}\nspec: {url: "http://127.0.0.1:${servers.other}/mcp", groupRef: bench}`);
  docs.push(
    'apiVersion: gatehouse.dev/v1alpha1\nkind: VirtualMCPServer\nmetadata: {name: bench}\nspec:\n' +
      '  config: {groupRef: bench, operational: {failureHandling: {healthCheckInterval: 0s}}}\n' +
      `  incomingAuth: {type: anonymous, resourceUrl: "http://127.0.0.1:${gatewayPort}/mcp"}`,
  );
  return docs.join('\n---\n') + '\n';
}

const toolOf = (mode: Mode): string => (mode === 'aggregated' ? 'echo_echo' : 'echo');

/** The echo server's own process (HTTP, SSE); null over stdio, where its processes are the gateway's children. */
const serverProcess = (transport: Transport, servers: Servers): number | null =>
  transport === 'http' ? servers.http.child.pid : transport === 'sse' ? servers.sse.child.pid : null;

interface Row {
  readonly label: string;
  readonly mode: Mode;
  readonly transport: Transport;
  gateway: Gateway;
  headers: Record<string, string>;
}

interface Figures {
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** The gateway process alone. */
  readonly gatewayCpuUsPerRequest: number;
  /** The echo server: its own process (HTTP, SSE), or the processes under the gateway (stdio). */
  readonly serverCpuUsPerRequest: number;
  readonly errors: number;
  /** CPU the machine spent outside this benchmark's processes during the run, % of all cores (another job on the host). */
  readonly otherProcessesPercent: number;
}

/** CPU of the gateway's own process, and of what is not it, between two snapshots. */
function split(before: CpuSnapshot, after: CpuSnapshot, gatewayPid: number): { gateway: number; rest: number } {
  const all = cpuDeltaMicros(before, after);
  const gateway = cpuDeltaMicros(new Map([[gatewayPid, before.get(gatewayPid) ?? 0]]), new Map([[gatewayPid, after.get(gatewayPid) ?? 0]]));
  return { gateway, rest: all - gateway };
}

async function measure(dir: string, label: string, row: Row, servers: Servers): Promise<Figures> {
  const body = echoCall(toolOf(row.mode));
  const wrk = (seconds: number, name: string) => runWrk({ url: row.gateway.url, seconds, connections: CONNECTIONS, threads: 1, headers: row.headers, body, dir, label: name });
  if (WARMUP > 0) await wrk(WARMUP, `${label}-warmup`);
  const gatewayPid = row.gateway.child.pid;
  const roots = [gatewayPid, serverProcess(row.transport, servers) ?? gatewayPid];
  const before = cpuSnapshot(roots);
  const [busyBefore, ownBefore, t0] = [machineBusyMicros(), ownTreeMicros(), performance.now()];
  const result = await wrk(SECONDS, label);
  const foreign = machineBusyMicros() - busyBefore - (ownTreeMicros() - ownBefore);
  const otherProcessesPercent = Math.max(0, Math.round((100 * foreign) / ((performance.now() - t0) * 1000 * availableParallelism())));
  const cpu = split(before, cpuSnapshot(roots), gatewayPid);
  const per = (us: number): number => Math.round((us / result.requests) * 10) / 10;
  const errors = result.errors.non2xx + result.errors.connect + result.errors.read + result.errors.write + result.errors.timeout;
  const figures = { rps: Math.round(result.rps), p50Ms: result.p50Ms, p99Ms: result.p99Ms, gatewayCpuUsPerRequest: per(cpu.gateway), serverCpuUsPerRequest: per(cpu.rest), errors, otherProcessesPercent };
  process.stderr.write(`  ${label}: ${figures.rps} req/s, gateway ${figures.gatewayCpuUsPerRequest} µs CPU/req, server ${figures.serverCpuUsPerRequest}, other processes ${otherProcessesPercent}% of the machine${errors > 0 ? ` ⚠ ${errors} errors` : ''}\n`);
  return figures;
}

async function startServers(): Promise<Servers> {
  const listening = async (child: ManagedChild): Promise<number> => Number((await child.waitForLine(/^LISTENING (\d+)/, 20_000))[1]);
  const start = (mode: 'http' | 'sse') => spawnChild(`echo-${mode}`, process.execPath, SERVER_ARGS(mode), { env: { ...process.env, PORT: '0' } });
  const http = start('http');
  const sse = start('sse');
  const other = spawnNodeScript('stdio-other-backend', join(import.meta.dirname, 'backend.ts'), ['--count', '1', '--tools', '5']);
  const otherPort = Number((await other.waitForLine(/^LISTENING (\d+)/, 20_000))[1]);
  return { http: { port: await listening(http), child: http }, sse: { port: await listening(sse), child: sse }, other: otherPort };
}

function selectedRows(): { mode: Mode; transport: Transport }[] {
  const parts = (process.env['BENCH_STDIO_ROWS'] ?? '').split(',').map((p) => p.trim()).filter((p) => p !== '');
  const modes: Mode[] = process.env['BENCH_STDIO_AGGREGATED'] === '0' ? ['transparent'] : ['transparent', 'aggregated'];
  return modes.flatMap((mode) => TRANSPORTS.map((transport) => ({ mode, transport }))).filter(({ mode, transport }) => parts.length === 0 || parts.some((p) => `${mode} ${transport}`.includes(p)));
}

async function startRows(dir: string, servers: Servers): Promise<Row[]> {
  const rows: Row[] = [];
  for (const { mode, transport } of selectedRows()) {
    const port = await freePort();
    const label = `${mode}-${transport}`;
    const gateway = await startGateway(dir, label, stdioBenchYaml(transport, mode, servers, port), port);
    const session = await openSession(gateway.url);
    await callOnce(gateway.url, session, toolOf(mode));
    rows.push({ label, mode, transport, gateway, headers: { ...HEADERS, 'mcp-session-id': session } });
  }
  return rows;
}

/** Parts 2 and 3 for one transport: a fresh transparent gateway, its sessions opened one by one. */
async function sessionCosts(dir: string, transport: Transport, servers: Servers): Promise<SessionCost> {
  const port = await freePort();
  const gateway = await startGateway(dir, `sessions-${transport}`, stdioBenchYaml(transport, 'transparent', servers, port), port);
  try {
    return await sessionCost({
      url: gateway.url,
      gatewayPid: gateway.child.pid,
      serverProcessPid: serverProcess(transport, servers),
      serverScript: STDIO_SERVER,
      tool: toolOf('transparent'),
      count: IDLE_STDIO_SESSIONS,
      idleServers: transport === 'stdio-shared' ? 1 : 0,
    });
  } finally {
    await gateway.child.stop();
  }
}

/**
 * The gateway's heap per idle session over each transport (in this process: stdio-sessions.ts):
 * BENCH_STDIO_SESSIONS sessions with a process each, ten times as many where no process is started.
 */
async function heapPerSessions(dir: string, servers: Servers): Promise<Record<Transport, { sessions: number; bytesPerSession: number | null }>> {
  const heap = {} as Record<Transport, { sessions: number; bytesPerSession: number | null }>;
  for (const transport of TRANSPORTS) {
    const sessions = transport === 'stdio' ? IDLE_STDIO_SESSIONS : IDLE_STDIO_SESSIONS * 10;
    const yaml = stdioBenchYaml(transport, 'transparent', servers, 1);
    const input = { tool: toolOf('transparent'), count: sessions, serverScript: STDIO_SERVER, idleServers: transport === 'stdio-shared' ? 1 : 0 };
    heap[transport] = { sessions, bytesPerSession: await heapPerSession(dir, `heap-${transport}`, yaml, input) };
  }
  return heap;
}

const median = (rounds: readonly Figures[]): Figures => [...rounds].sort((a, b) => a.gatewayCpuUsPerRequest - b.gatewayCpuUsPerRequest)[Math.floor((rounds.length - 1) / 2)]!;
const ratio = (a: number | undefined, b: number | undefined): number | null => (a === undefined || b === undefined || !(b > 0) ? null : Math.round((a / b) * 100) / 100);

/** Each transport ÷ HTTP in one mode: the gateway's CPU per request, p50 and p99, of the medians and per round. */
function overHttp(medians: Record<string, Figures>, rounds: Record<string, Figures>[], mode: Mode) {
  const http = medians[`${mode}-http`];
  const of = (t: Transport) => {
    const m = medians[`${mode}-${t}`];
    if (m === undefined || http === undefined) return null;
    return {
      cpu: ratio(m.gatewayCpuUsPerRequest, http.gatewayCpuUsPerRequest),
      p50: ratio(m.p50Ms, http.p50Ms),
      p99: ratio(m.p99Ms, http.p99Ms),
      cpuRounds: rounds.map((r) => ratio(r[`${mode}-${t}`]?.gatewayCpuUsPerRequest, r[`${mode}-http`]?.gatewayCpuUsPerRequest)),
    };
  };
  return { stdio: of('stdio'), stdioShared: of('stdio-shared'), sse: of('sse') };
}

export async function runStdio(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-stdio-'));
  try {
    const servers = await startServers();
    // First, while this process holds nothing else: its heap is where the in-process gateway is measured.
    const heap = await heapPerSessions(dir, servers);
    const rows = await startRows(dir, servers);
    const rounds: Record<string, Figures>[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const figures: Record<string, Figures> = {};
      for (const row of round % 2 === 0 ? rows : [...rows].reverse()) figures[row.label] = await measure(dir, `${row.label}-${round}`, row, servers);
      rounds.push(figures);
    }
    // The measured gateways end before parts 2 and 3, which start gateways of their own.
    for (const row of rows) await row.gateway.child.stop();
    const medians = Object.fromEntries(rows.map((r) => [r.label, median(rounds.map((f) => f[r.label]!))]));
    const sessions: Partial<Record<Transport, SessionCost>> = {};
    for (const transport of TRANSPORTS) sessions[transport] = await sessionCosts(dir, transport, servers);
    const bare = await bareStarts(process.execPath, SERVER_ARGS('stdio'), toolOf('transparent'), IDLE_STDIO_SESSIONS);
    const report = {
      date: new Date().toISOString(),
      node: process.version,
      setup: { server: `bench/aggregate/echo-server.mjs${SDK ? ' --sdk (the SDK\'s McpServer and transports)' : ' (minimal, no dependencies)'}`, wrk: `-t1 -c${CONNECTIONS} -d${SECONDS}s (one session)`, warmupSeconds: WARMUP, rounds: ROUNDS, idleSessions: IDLE_STDIO_SESSIONS },
      toolsCall: { medians, overHttp: { transparent: overHttp(medians, rounds, 'transparent'), aggregated: overHttp(medians, rounds, 'aggregated') }, rounds },
      sessions,
      /** The gateway's heap + external memory per idle session (bytes, after a full GC; the gateway in the benchmark's process). */
      gatewayHeapBytesPerSession: heap,
      bareStart: bare,
    };
    const file = join(RESULTS_DIR, `stdio${SDK ? '-sdk' : ''}${process.env['BENCH_STDIO_ROWS'] === undefined ? '' : '-partial'}.json`);
    writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
    process.stdout.write(`${printed(report, rows).join('\n')}\n\nwrote ${file}\n`);
  } finally {
    await stopAll();
  }
}

type Report = {
  toolsCall: { medians: Record<string, Figures>; overHttp: Record<Mode, ReturnType<typeof overHttp>> };
  sessions: Partial<Record<Transport, SessionCost>>;
  gatewayHeapBytesPerSession: Record<Transport, { sessions: number; bytesPerSession: number | null }>;
  bareStart: Awaited<ReturnType<typeof bareStarts>>;
};

function printed(report: Report, rows: readonly Row[]): string[] {
  const x = (n: number | null | undefined): string => (n === null || n === undefined ? 'n/a' : `${n.toFixed(2)}×`);
  const lines = [
    '## Transports: streamable HTTP, stdio, legacy SSE',
    '',
    `tools/call of the same echo server (${SDK ? 'the SDK\'s McpServer' : 'minimal'}), wrk -c${CONNECTIONS} in one session (one child per session = one child here); medians of ${ROUNDS} round(s)`,
    '',
    '| row | req/s | p50 ms | p99 ms | gateway CPU µs/req | server CPU µs/req | errors | other processes |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) => {
      const m = report.toolsCall.medians[r.label]!;
      return `| ${r.mode}, ${NAMES[r.transport]} | ${m.rps} | ${m.p50Ms} | ${m.p99Ms} | ${m.gatewayCpuUsPerRequest} | ${m.serverCpuUsPerRequest} | ${m.errors} | ${m.otherProcessesPercent} % |`;
    }),
    '',
  ];
  for (const mode of ['transparent', 'aggregated'] as const) {
    const o = report.toolsCall.overHttp[mode];
    const one = (name: string, r: ReturnType<typeof overHttp>['stdio']): string => (r === null ? '' : `${name} ÷ HTTP: CPU ${x(r.cpu)} (rounds ${r.cpuRounds.map(x).join(', ')}), p50 ${x(r.p50)}, p99 ${x(r.p99)}`);
    const parts = [one('stdio', o.stdio), one('stdio shared', o.stdioShared), one('SSE', o.sse)].filter((s) => s !== '');
    if (parts.length > 0) lines.push(`${mode}: ${parts.join('; ')}`);
  }
  lines.push(
    '',
    `| new sessions, transparent (${IDLE_STDIO_SESSIONS}) | initialize p50 ms | p99 ms | RSS per idle session, gateway + its children | the gateway's RSS | the gateway's heap | the server's own process |`,
    '|---|---:|---:|---:|---:|---:|---:|',
  );
  for (const t of TRANSPORTS) {
    const s = report.sessions[t];
    const heap = report.gatewayHeapBytesPerSession[t].bytesPerSession;
    const server = s?.serverProcessKiBPerSession ?? null;
    if (s !== undefined) lines.push(`| ${NAMES[t]} | ${s.initializeP50Ms} | ${s.initializeP99Ms} | ${s.treeKiBPerSession} KiB | ${s.gatewayKiBPerSession} KiB | ${heap === null ? 'n/a' : `${(heap / 1024).toFixed(1)} KiB (${report.gatewayHeapBytesPerSession[t].sessions})`} | ${server === null ? '—' : `${server} KiB`} |`);
  }
  const b = report.bareStart;
  lines.push('', `the stdio server alone (spawn → initialize answered, ${b.starts} starts): p50 ${b.p50Ms} ms, p99 ${b.p99Ms} ms; its RSS after one call ${b.rssKiB} KiB`);
  return lines;
}

if (process.argv[1]?.endsWith('aggregate/stdio.ts')) {
  runStdio().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
