/**
 * The walk of one MCP POST through the gateway: which files of core/ and plugins/ it passes
 * through and how often it enters each, counted by V8's precise coverage (function call counts),
 * not sampled. It says how far a request travels before it is answered — what a reader must
 * follow to understand it, and a first cut of what it costs.
 *
 *   npm run bench -- --walk-only     prints the walks and writes bench/results/walk.json
 *
 * Each walk starts a gateway in this process (from a YAML file, as `vmcp serve` does) in front of
 * the load benchmark's backend (bench/load/backend.ts, in this process too: its files are not
 * counted), sends a few requests to warm everything up, resets the counters, sends the one
 * request measured (a `tools/call` of a session opened before), and reads the counters. A
 * "stop" is one call of a function; a file's "entries" are its functions' calls.
 */
import { writeFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadVmcpConfig } from '../core/config/vmcp-config.ts';
import { createLogger } from '../core/observe/log.ts';
import { startVmcp } from '../core/vmcp/virtual-mcp-server.ts';
import { VmcpBuiltins } from '../plugins/cli/vmcp-builtins.ts';
import { createBackend } from './load/backend.ts';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const RESULTS = join(REPO_ROOT, 'bench', 'results', 'walk.json');

interface Stop {
  readonly file: string;
  readonly fn: string;
  readonly calls: number;
}

export interface Walk {
  readonly name: string;
  /** Files of core/ and plugins/ the request passed through. */
  readonly files: number;
  /** Function calls in those files. */
  readonly stops: number;
  /** Calls into each file, most first. */
  readonly entries: Record<string, number>;
  readonly functions: readonly Stop[];
}

interface Coverage {
  result: { url: string; functions: { functionName: string; ranges: { count: number }[] }[] }[];
}

async function listen(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createBackend();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function yaml(backends: readonly string[]): string {
  const servers = backends.map((url, i) => `apiVersion: gatehouse.dev/v1alpha1\nkind: MCPServer\nmetadata: {name: b${i}}\nspec: {url: "${url}", transport: streamable-http, groupRef: walk}\n---\n`).join('');
  return `apiVersion: gatehouse.dev/v1alpha1\nkind: MCPGroup\nmetadata: {name: walk}\n---\n${servers}apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: walk}
spec:
  config: {groupRef: walk}
  incomingAuth: {type: anonymous}
  outgoingAuth: {source: discovered}
`;
}

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };

async function post(url: string, body: unknown, session?: string): Promise<Response> {
  const res = await fetch(url, { method: 'POST', headers: session === undefined ? HEADERS : { ...HEADERS, 'mcp-session-id': session }, body: JSON.stringify(body) });
  await res.arrayBuffer();
  if (res.status >= 400) throw new Error(`${res.status} from the gateway`);
  return res;
}

/** The functions of core/ and plugins/ that ran, from a coverage taken right after a reset. */
function stopsOf(coverage: Coverage): Stop[] {
  const stops: Stop[] = [];
  for (const script of coverage.result) {
    if (!script.url.startsWith('file:')) continue;
    const file = relative(REPO_ROOT, fileURLToPath(script.url));
    if (!file.startsWith('core/') && !file.startsWith('plugins/')) continue;
    for (const fn of script.functions) {
      const calls = fn.ranges[0]?.count ?? 0;
      if (calls > 0 && fn.functionName !== '') stops.push({ file, fn: fn.functionName, calls });
    }
  }
  return stops;
}

async function walkThrough(name: string, backendCount: number): Promise<Walk> {
  const backends = await Promise.all(Array.from({ length: backendCount }, () => listen()));
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-walk-'));
  const file = join(dir, 'vmcp.yaml');
  await writeFile(file, yaml(backends.map((b) => b.url)));
  const config = await loadVmcpConfig(file);
  const vmcp = await startVmcp({ config, builtins: new VmcpBuiltins().for(config), log: createLogger('silent'), host: '127.0.0.1', port: 0 });
  const url = vmcp.url;
  const inspector = new Session();
  inspector.connect();
  try {
    const opened = await post(url, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'walk', version: '1' } } });
    const session = opened.headers.get('mcp-session-id') ?? undefined;
    await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, session);
    const tool = backendCount === 1 ? 'echo' : 'b0_echo';
    const call = (id: number): unknown => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: { text: 'walk' } } });
    await post(url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, session);
    for (let i = 0; i < 20; i++) await post(url, call(10 + i), session);
    await inspector.post('Profiler.enable');
    await inspector.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    await inspector.post('Profiler.takePreciseCoverage'); // resets the counters
    await post(url, call(99), session);
    const stops = stopsOf((await inspector.post('Profiler.takePreciseCoverage')) as Coverage);
    await inspector.post('Profiler.stopPreciseCoverage');
    const entries: Record<string, number> = {};
    for (const stop of stops) entries[stop.file] = (entries[stop.file] ?? 0) + stop.calls;
    const sorted = Object.fromEntries(Object.entries(entries).sort((a, b) => b[1] - a[1]));
    return { name, files: Object.keys(entries).length, stops: stops.reduce((n, s) => n + s.calls, 0), entries: sorted, functions: stops };
  } finally {
    inspector.disconnect();
    await vmcp.stop();
    for (const backend of backends) await backend.close();
  }
}

export async function runWalk(): Promise<boolean> {
  const walks = [await walkThrough('transparent tools/call', 1), await walkThrough('aggregated tools/call (2 backends)', 2)];
  for (const walk of walks) {
    console.log(`\n${walk.name}: ${walk.files} files, ${walk.stops} function calls`);
    for (const [file, calls] of Object.entries(walk.entries)) console.log(`  ${String(calls).padStart(4)}  ${file}`);
  }
  writeFileSync(RESULTS, JSON.stringify({ at: new Date().toISOString(), walks }, null, 2) + '\n');
  console.log(`\nwritten to ${relative(process.cwd(), RESULTS)}`);
  return true;
}
