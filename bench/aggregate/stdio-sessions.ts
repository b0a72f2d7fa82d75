/**
 * Parts 2 and 3 of the stdio benchmark (stdio.ts): what an idle session costs in memory, and how
 * long a new session's `initialize` takes, through a gateway in front of one backend; and, for
 * comparison, the bare start-up of the stdio server's command outside the gateway.
 *
 * Memory is read from /proc: VmRSS of the gateway and of every process under it (its stdio
 * children, found by walking /proc/<pid>/stat for the gateway's descendants, and the process
 * watchdog, core/upstream/stdio/watchdog.ts), and of the backend's own process when it is not the
 * gateway's (HTTP, SSE). Sessions are opened one after the other, so each `initialize` is timed
 * alone: for a stdio backend in its own process per session, that is the child spawned, its
 * handshake answered, and the answer back to the client.
 *
 * The gateway's own share is a few KiB a session, below what RSS tells apart in 20 sessions (a
 * GC between the two readings moves it by hundreds of KiB): it is also measured as heap, with
 * the gateway in this process (`startVmcp`, as the aggregation benchmark measures its sessions),
 * after a full GC before and after.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { loadVmcpConfig } from '../../core/config/vmcp-config.ts';
import { createLogger } from '../../core/observe/log.ts';
import { startVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { tree } from '../../plugins/cli/bench/cpu.ts';
import { vmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';
import { HEADERS, openSession, rpc } from './run.ts';

/** A tools/call of the echo tool (`tool`: its name as the gateway lists it). */
export const echoCall = (tool: string): string => JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: tool, arguments: { text: 'hi' } } });

const INITIALIZE_BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });

/** VmRSS of a process in KiB, or 0 when it is gone. */
export function rssKiB(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m?.[1] === undefined ? 0 : Number(m[1]);
  } catch {
    return 0;
  }
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

/** The memory of a gateway and the processes under it, in KiB. */
export interface TreeMemory {
  readonly gatewayKiB: number;
  /** Its children running `serverScript` (the stdio servers): how many, and their RSS summed. */
  readonly servers: number;
  readonly serversKiB: number;
  /** Everything else under it (the watchdog). */
  readonly otherKiB: number;
  readonly totalKiB: number;
}

export function treeMemory(gateway: number, serverScript: string): TreeMemory {
  let servers = 0;
  let serversKiB = 0;
  let otherKiB = 0;
  for (const pid of tree(gateway)) {
    if (pid === gateway) continue;
    const kib = rssKiB(pid);
    if (cmdline(pid).includes(serverScript)) {
      servers++;
      serversKiB += kib;
    } else {
      otherKiB += kib;
    }
  }
  const gatewayKiB = rssKiB(gateway);
  return { gatewayKiB, servers, serversKiB, otherKiB, totalKiB: gatewayKiB + serversKiB + otherKiB };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `count` stdio servers run under the gateway (a session's DELETE ends its child after a grace period). */
export async function serversSettle(gateway: number, serverScript: string, count: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (treeMemory(gateway, serverScript).servers !== count) {
    if (Date.now() > deadline) throw new Error(`${treeMemory(gateway, serverScript).servers} stdio servers under the gateway after ${timeoutMs} ms, ${count} expected`);
    await sleep(100);
  }
}

/** Opens `count` sessions one after the other: each initialize timed, then initialized and one call. */
export async function openTimedSessions(url: string, count: number, tool: string): Promise<{ sessions: string[]; initializeMs: number[] }> {
  const sessions: string[] = [];
  const initializeMs: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const res = await rpc(url, INITIALIZE_BODY);
    await res.arrayBuffer();
    initializeMs.push(performance.now() - started);
    const id = res.headers.get('mcp-session-id');
    if (id === null) throw new Error('no Mcp-Session-Id from initialize');
    await (await rpc(url, '{"jsonrpc":"2.0","method":"notifications/initialized"}', { 'mcp-session-id': id })).arrayBuffer();
    await callOnce(url, id, tool);
    sessions.push(id);
  }
  return { sessions, initializeMs };
}

/** One call in a session, checked to be a result. */
export async function callOnce(url: string, session: string, tool: string): Promise<void> {
  const answer = (await (await rpc(url, echoCall(tool), { 'mcp-session-id': session })).json()) as { result?: unknown; error?: unknown };
  if (answer.result === undefined) throw new Error(`tools/call ${tool} failed: ${JSON.stringify(answer)}`);
}

export async function closeSessions(url: string, sessions: readonly string[]): Promise<void> {
  for (const id of sessions) await fetch(url, { method: 'DELETE', headers: { ...HEADERS, 'mcp-session-id': id } }).then((r) => r.arrayBuffer());
}

/** A session opened, called once and closed, `times` times: the code paths warm, the watchdog started. */
export async function warmSessions(url: string, tool: string, times: number): Promise<void> {
  for (let i = 0; i < times; i++) {
    const id = await openSession(url);
    await callOnce(url, id, tool);
    await closeSessions(url, [id]);
  }
}

/** Bare start-up of the stdio server: spawn → its initialize answered; and its RSS after one call. */
export interface BareStart {
  readonly startMs: number;
  readonly rssKiB: number;
}

/**
 * Starts `command args` as the gateway would (no shell, only PATH and HOME), sends initialize and
 * times the answer, then initialized and one call, reads its RSS and ends it.
 */
export function bareStart(command: string, args: readonly string[], tool: string, timeoutMs = 20_000): Promise<BareStart> {
  const started = performance.now();
  const child = spawn(command, args, { env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '' }, stdio: ['pipe', 'pipe', 'ignore'] });
  const init = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
  child.stdin.write(`${init}\n`);
  return new Promise<BareStart>((resolve, reject) => {
    let startMs = 0;
    let pending = '';
    const timer = setTimeout(() => done(new Error(`${command}: no answer within ${timeoutMs} ms`)), timeoutMs);
    // Settles once the child is gone, so the next start does not share the machine with its end.
    const done = (err: Error | null, result?: BareStart): void => {
      clearTimeout(timer);
      child.stdout.removeAllListeners('data');
      child.removeAllListeners('exit');
      if (child.exitCode !== null || child.signalCode !== null) return err !== null ? reject(err) : resolve(result!);
      child.once('exit', () => (err !== null ? reject(err) : resolve(result!)));
      child.kill('SIGTERM');
    };
    child.once('error', (err) => done(err));
    child.once('exit', (code, signal) => done(new Error(`${command} exited (${signal ?? code}) before it answered`)));
    child.stdout.on('data', (chunk: Buffer) => {
      const lines = (pending + chunk.toString('utf8')).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const id = (JSON.parse(line) as { id?: unknown }).id;
        if (id === 0) {
          startMs = performance.now() - started;
          child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
          child.stdin.write(`${echoCall(tool).replace('"id":7', '"id":1')}\n`);
        } else if (id === 1) {
          done(null, { startMs, rssKiB: rssKiB(child.pid!) });
        }
      }
    });
  });
}

const percentileOf = (values: readonly number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 100) / 100;
};

/** What `count` new sessions cost through one gateway (part 2 and 3 of stdio.ts). */
export interface SessionCost {
  readonly sessions: number;
  readonly initializeP50Ms: number;
  readonly initializeP99Ms: number;
  readonly initializeMs: readonly number[];
  /** (RSS of the gateway and every process under it, after − before) ÷ sessions. */
  readonly treeKiBPerSession: number;
  /** The gateway process's own share of it. */
  readonly gatewayKiBPerSession: number;
  /** The stdio servers under the gateway, before and after. */
  readonly servers: { readonly before: number; readonly after: number; readonly averageKiB: number | null };
  /** The backend's own process (HTTP, SSE), ÷ sessions; null over stdio (its processes are the gateway's). */
  readonly serverProcessKiBPerSession: number | null;
  readonly before: TreeMemory;
  readonly after: TreeMemory;
}

export interface SessionCostInput {
  readonly url: string;
  readonly gatewayPid: number;
  /** The backend's own process when it is not under the gateway. */
  readonly serverProcessPid: number | null;
  /** What the stdio servers' command lines hold (the script's path and mode). */
  readonly serverScript: string;
  readonly tool: string;
  readonly count: number;
  /** Stdio servers under the gateway with no session open (1 when shared, the child stays). */
  readonly idleServers: number;
}

/**
 * Warms the gateway (three sessions opened, called, closed; their children gone), reads the
 * baseline, opens `count` sessions one after the other (each initialize timed), waits a moment
 * for the processes to settle, reads again, and closes them.
 */
export async function sessionCost(input: SessionCostInput): Promise<SessionCost> {
  const { url, gatewayPid, serverProcessPid, serverScript, tool, count, idleServers } = input;
  await warmSessions(url, tool, 3);
  await serversSettle(gatewayPid, serverScript, idleServers);
  await sleep(500);
  const before = treeMemory(gatewayPid, serverScript);
  const serverBefore = serverProcessPid === null ? 0 : rssKiB(serverProcessPid);
  const opened = await openTimedSessions(url, count, tool);
  await sleep(1000);
  const after = treeMemory(gatewayPid, serverScript);
  const serverAfter = serverProcessPid === null ? 0 : rssKiB(serverProcessPid);
  await closeSessions(url, opened.sessions);
  const per = (kib: number): number => Math.round(kib / count);
  return {
    sessions: count,
    initializeP50Ms: percentileOf(opened.initializeMs, 50),
    initializeP99Ms: percentileOf(opened.initializeMs, 99),
    initializeMs: opened.initializeMs.map((ms) => Math.round(ms * 100) / 100),
    treeKiBPerSession: per(after.totalKiB - before.totalKiB),
    gatewayKiBPerSession: per(after.gatewayKiB - before.gatewayKiB),
    servers: { before: before.servers, after: after.servers, averageKiB: after.servers === 0 ? null : Math.round(after.serversKiB / after.servers) },
    serverProcessKiBPerSession: serverProcessPid === null ? null : per(serverAfter - serverBefore),
    before,
    after,
  };
}

/** The stdio server started `count` times outside the gateway: spawn → initialize answered, p50/p99, and its RSS after one call (median). */
export async function bareStarts(command: string, args: readonly string[], tool: string, count: number) {
  const starts: BareStart[] = [];
  for (let i = 0; i < count; i++) starts.push(await bareStart(command, args, tool));
  const ms = starts.map((s) => s.startMs);
  return { starts: count, p50Ms: percentileOf(ms, 50), p99Ms: percentileOf(ms, 99), rssKiB: percentileOf(starts.map((s) => s.rssKiB), 50), startMs: ms.map((v) => Math.round(v * 100) / 100) };
}

/**
 * Heap (and external memory) per idle session of a gateway on `yaml`, run in this process: warmed
 * up, a full GC, `count` sessions opened (initialize, one call), a full GC again. The stdio children it starts are
 * this process's for as long as it runs; their sessions are closed and the gateway stopped after.
 */
export async function heapPerSession(dir: string, label: string, yaml: string, input: { tool: string; count: number; serverScript: string; idleServers: number }): Promise<number | null> {
  const { tool, count, serverScript, idleServers } = input;
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (() => void) | undefined;
  if (typeof gc !== 'function') return null;
  const file = join(dir, `${label}.yaml`);
  writeFileSync(file, yaml.replace(/resourceUrl: "[^"]+"/, 'resourceUrl: "http://127.0.0.1:1/mcp"'));
  const config = await loadVmcpConfig(file);
  const gateway = await startVmcp({ config, port: 0, log: createLogger('silent'), builtins: vmcpBuiltins(config) });
  try {
    await warmSessions(gateway.url, tool, 3);
    // The warm-up's children gone (their ChildProcess objects are garbage only then).
    await serversSettle(process.pid, serverScript, idleServers);
    // The heap and what it holds outside it (Buffers: a child's pipes and line buffers).
    const used = (): number => process.memoryUsage().heapUsed + process.memoryUsage().external;
    gc();
    const heap0 = used();
    const opened = await openTimedSessions(gateway.url, count, tool);
    gc();
    gc();
    const heap1 = used();
    await closeSessions(gateway.url, opened.sessions);
    return Math.round((heap1 - heap0) / count);
  } finally {
    await gateway.stop();
  }
}
