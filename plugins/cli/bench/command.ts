/**
 * `gatehouse bench`: the latency, throughput and CPU per request of one's own gateway, and what
 * each plugin hook costs.
 *
 * 1. The configuration is validated as `vmcp validate` does (a bad file: exit 2, nothing started).
 * 2. Echo mode (default): the built-in echo backend (echo-backend.ts, a child process) stands
 *    in for every MCPServer of the group (bench-config.ts says what else the copy changes);
 *    `--live` keeps the configured backends.
 * 3. The gateway runs as `gatehouse vmcp serve` does, as a child process (`bin.mjs vmcp serve
 *    --config <copy> --port 0`): the same code path, and its CPU time is its own (/proc).
 * 4. A client session (or the 2026-07-28 stateless form), `tools/list` to pick the tool when
 *    `--tool` is not given, one checked `tools/call`.
 * 5. The backend called directly (echo mode; with --live when the group has one backend and it
 *    answers without the gateway's credentials), then, in echo mode, nginx and a bare
 *    http-proxy in front of the echo backend with the gateway's request (reference.ts; each
 *    skipped with the reason when missing, all with --no-reference), then through the gateway:
 *    warm-up, measured run with autocannon in this process (load.ts), CPU of the answering
 *    process, and, around the gateway's run, two scrapes of its /metrics for each plugin
 *    phase's time (metrics.ts). The gateway's CPU per request and p99 ÷ each reference's.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import process from 'node:process';
import { StartupError, type VmcpConfig } from '@gatehouse-mcp/gateway';
import { InvalidConfigError } from '../exit-codes.ts';
import { loadConfig } from '../serve.ts';
import { validateVmcp } from '../vmcp-builtins.ts';
import { benchConfigText } from './bench-config.ts';
import { checkRequest, clientHeaders, ClientError, listTools, toolCall, type BenchRequest, type Protocol } from './client.ts';
import { cpuMicrosBetween, cpuSnapshot, everyProcess, otherMicrosBetween } from './cpu.ts';
import { drive } from './load.ts';
import { metricsDelta, type GatewayTimes } from './metrics.ts';
import { Child, ChildExited, stopChildrenOnExit } from './processes.ts';
import { ReferenceSkipped, startHttpProxy, startNginx, type Reference } from './reference.ts';
import { gatewayRatios, textReport, type BenchResult, type RowResult } from './report.ts';

export interface BenchOptions {
  config: string;
  live: boolean;
  /** Milliseconds. */
  duration: number;
  warmup: number;
  connections: number;
  json: boolean;
  tool?: string;
  arguments: unknown;
  protocol: Protocol;
  token?: string;
  echoTools: string[];
  /** false with --no-reference: neither nginx nor http-proxy is measured. */
  reference: boolean;
  /** --nginx: the nginx binary (default: on PATH, else /usr/sbin/nginx). */
  nginx?: string;
}

const BIN = fileURLToPath(new URL('../bin.mjs', import.meta.url));
const ECHO_BACKEND = fileURLToPath(new URL('./echo-backend.ts', import.meta.url));
const START_TIMEOUT_MS = 30_000;

/** The bench ran but its figures are not those of successful calls, or a step after the start failed: exit 1. */
class BenchFailed extends StartupError {}

const progress = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/** Incoming auth the bench can pass: anonymous, or a token given. Otherwise: exit 2 with what to do. */
function checkAuth(config: VmcpConfig, token: string | undefined): void {
  if (config.incomingAuth.type === 'anonymous' || token !== undefined) return;
  const incoming = config.incomingAuth;
  const issuer = config.authServer !== null ? `its embedded authorization server (${config.authServer.issuer})` : `its issuer (${incoming.oidc.issuer})`;
  throw new InvalidConfigError(
    `VirtualMCPServer/${config.name} has incomingAuth ${incoming.type}: every request needs a bearer token from ${issuer} for ${incoming.resourceUrl}. ` +
      'Pass one with --token (or GATEHOUSE_BENCH_TOKEN): a token the running gateway accepts is accepted by the bench\'s gateway too, since it checks the same issuer, audience and keys' +
      (config.authServer !== null ? ' (the embedded server\'s signing keys must then be configured: without them each process makes its own)' : '') +
      '.',
  );
}

async function startEcho(tools: readonly string[]): Promise<{ child: Child; port: number }> {
  const child = new Child('the echo backend', process.execPath, ['--import', import.meta.resolve('tsx'), ECHO_BACKEND, tools.join(',')]);
  const port = await child.waitFor('listen', (line) => /^LISTENING (\d+)$/.exec(line)?.[1], START_TIMEOUT_MS);
  return { child, port: Number(port) };
}

async function startGateway(file: string): Promise<{ child: Child; url: string; admin: string | null }> {
  const child = new Child('the gateway', process.execPath, [BIN, 'vmcp', 'serve', '--config', file, '--host', '127.0.0.1', '--port', '0', '--log-format', 'json', '--log-level', 'info']);
  try {
    return await child.waitFor(
      'listen',
      (line) => {
        if (!line.startsWith('{')) return undefined;
        const entry = JSON.parse(line) as { msg?: unknown; url?: unknown; admin?: unknown };
        if (entry.msg !== 'virtual MCP server listening' || typeof entry.url !== 'string') return undefined;
        return { child, url: entry.url, admin: typeof entry.admin === 'string' ? entry.admin : null };
      },
      START_TIMEOUT_MS,
    );
  } catch (err) {
    await child.stop();
    // The gateway refused the configuration (a plugin module that is not a plugin, say): exit 2 as serve does.
    if (err instanceof ChildExited && err.code === 2) throw new InvalidConfigError(`the gateway refused the configuration:\n${err.output}`);
    throw new BenchFailed(`the gateway did not start: ${(err as Error).message}`);
  }
}

async function scrape(url: string, headers: Readonly<Record<string, string>>): Promise<string> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${url}: HTTP ${res.status} ${text.slice(0, 200)}`);
  return text;
}

interface Measured {
  row: RowResult;
  /** CPU µs per request of each watched process, by pid. */
  cpuPerRequest: Map<number, number | null>;
}

/** Warm-up, `beforeRun`, then the measured run, with the CPU of `answering` and of every `watched` process. */
async function measure(req: BenchRequest, options: BenchOptions, answering: Child | null, watched: readonly Child[], beforeRun?: () => Promise<void>): Promise<Measured> {
  if (options.warmup > 0) await drive(req, options.connections, options.warmup / 1000);
  await beforeRun?.();
  const pids = [...new Set([...(answering === null ? [] : [answering.pid]), ...watched.map((c) => c.pid)])];
  const before = new Map(pids.map((pid) => [pid, cpuSnapshot(pid)]));
  const everyBefore = everyProcess();
  const load = await drive(req, options.connections, options.duration / 1000);
  const otherMicros = otherMicrosBetween(everyBefore, everyProcess(), [process.pid, ...pids]);
  const cpuPerRequest = new Map<number, number | null>();
  for (const pid of pids) {
    const micros = cpuMicrosBetween(before.get(pid) ?? null, cpuSnapshot(pid));
    cpuPerRequest.set(pid, micros === null || load.requests === 0 ? null : micros / load.requests);
  }
  const other = otherMicros === null ? null : Math.max(0, (100 * otherMicros) / (load.seconds * 1e6 * availableParallelism()));
  return { row: { url: req.url, ...load, cpuMicrosPerRequest: answering === null ? null : (cpuPerRequest.get(answering.pid) ?? null), otherProcessesCpuPercent: other }, cpuPerRequest };
}

interface References {
  nginx: RowResult | null;
  nginxSkipped: string | null;
  httpProxy: RowResult | null;
  httpProxySkipped: string | null;
}

/**
 * nginx, then the bare http-proxy, each in front of the echo backend's `backend` path, each
 * loaded with the gateway's request (its body and headers, the bearer token left out: the echo
 * backend answers any session and any form) as the gateway is, then stopped.
 */
async function measureReferences(call: BenchRequest, options: BenchOptions, echo: { child: Child; port: number } | null, backend: string, dir: string): Promise<References> {
  const out: References = { nginx: null, nginxSkipped: null, httpProxy: null, httpProxySkipped: null };
  const off = !options.reference ? '--no-reference' : echo === null ? 'with --live (they stand in front of the echo backend)' : null;
  if (off !== null || echo === null) return { ...out, nginxSkipped: off, httpProxySkipped: off };
  const { authorization: _, ...headers } = call.headers;
  const kinds = [
    { name: 'nginx', key: 'nginx', start: () => startNginx(join(dir, 'nginx'), echo.port, options.nginx) },
    { name: 'http-proxy', key: 'httpProxy', start: () => startHttpProxy(`http://127.0.0.1:${echo.port}`) },
  ] as const;
  for (const kind of kinds) {
    let ref: Reference;
    try {
      ref = await kind.start();
    } catch (err) {
      if (!(err instanceof ReferenceSkipped)) throw err;
      progress(`${kind.name}: not measured: ${err.message}`);
      out[`${kind.key}Skipped`] = err.message;
      continue;
    }
    try {
      const req: BenchRequest = { url: `${ref.origin}/mcp/${encodeURIComponent(backend)}`, headers, body: call.body };
      await checkRequest(req, `tools/call through ${kind.name}`);
      progress(`${kind.name} in front of the echo backend: ${req.url}`);
      out[kind.key] = (await measure(req, options, ref.child, [echo.child])).row;
    } catch (err) {
      if (!(err instanceof ClientError)) throw err;
      out[`${kind.key}Skipped`] = err.message;
    } finally {
      await ref.child.stop();
    }
  }
  return out;
}

export async function bench(options: BenchOptions): Promise<void> {
  const config = await loadConfig(options, validateVmcp);
  checkAuth(config, options.token);
  stopChildrenOnExit();
  const auth: Record<string, string> = options.token === undefined ? {} : { authorization: `Bearer ${options.token}` };
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-'));
  // Ctrl-C exits from its handler (processes.ts), past the finally below.
  const removeDir = (): void => rmSync(dir, { recursive: true, force: true });
  process.once('exit', removeDir);
  const children: Child[] = [];
  try {
    let echo: { child: Child; port: number } | null = null;
    if (!options.live) {
      progress('starting the echo backend');
      echo = await startEcho(options.echoTools);
      children.push(echo.child);
    }
    const echoUrl = (name: string): string => `http://127.0.0.1:${echo!.port}/mcp/${encodeURIComponent(name)}`;
    const file = join(dir, 'vmcp.yaml');
    writeFileSync(file, benchConfigText(config, echo === null ? null : new Map(config.backends.map((b) => [b.name, echoUrl(b.name)]))));
    progress(`starting the gateway: gatehouse vmcp serve --config ${options.config} (a copy${echo === null ? '' : ' with the echo backend as every MCPServer'})`);
    const gateway = await startGateway(file);
    children.push(gateway.child);

    let call: BenchRequest;
    let tool: string;
    try {
      const headers = await clientHeaders(gateway.url, options.protocol, auth);
      tool = options.tool ?? (await listTools(gateway.url, options.protocol, headers))[0] ?? '';
      if (tool === '') {
        throw new ClientError(
          `the gateway lists no tool, so there is nothing to call${echo === null ? '' : ` (every echo backend lists ${options.echoTools.join(', ')}; a plugin may filter them out: name the tools it lets through with --echo-tools)`}; or pass --tool`,
        );
      }
      call = await toolCall(gateway.url, options.protocol, headers, tool, options.arguments);
    } catch (err) {
      if (err instanceof ClientError) throw new BenchFailed(err.message);
      throw err;
    }

    // The backend called directly: the same call, without the gateway (nor its credentials).
    let backend: RowResult | null = null;
    let backendSkipped: string | null = null;
    const direct = echo !== null ? echoUrl(config.backends[0]!.name) : config.backends.length === 1 ? config.backends[0]!.url : null;
    if (direct === null) backendSkipped = 'with --live and several backends, which backend and name the gateway calls a tool by is its own business';
    else {
      try {
        const directCall = await toolCall(direct, '2025-11-25', await clientHeaders(direct, '2025-11-25', {}), tool, options.arguments);
        progress(`backend, called directly: ${direct}`);
        // With --live the backend is not the bench's process: its CPU is not known.
        backend = (await measure(directCall, options, echo?.child ?? null, [gateway.child])).row;
      } catch (err) {
        if (!(err instanceof ClientError)) throw err;
        backendSkipped = `${err.message} (the bench calls it without the gateway's credentials)`;
      }
    }

    const references = await measureReferences(call, options, echo, config.backends[0]!.name, dir);

    progress(`through the gateway: ${gateway.url}`);
    const metricsUrl = gateway.admin !== null ? new URL('/metrics', gateway.admin).href : new URL('/metrics', gateway.url).href;
    const metricsHeaders = gateway.admin !== null ? {} : auth;
    const scraped: { before: string | null } = { before: null };
    let gatewayMetricsSkipped: string | null = null;
    // The first scrape after the warm-up, the second after the measured run.
    const measured = await measure(call, options, gateway.child, echo === null ? [] : [echo.child], async () => {
      try {
        scraped.before = await scrape(metricsUrl, metricsHeaders);
      } catch (err) {
        gatewayMetricsSkipped = (err as Error).message;
      }
    });
    let gatewayMetrics: GatewayTimes | null = null;
    if (scraped.before !== null) {
      try {
        gatewayMetrics = metricsDelta(scraped.before, await scrape(metricsUrl, metricsHeaders), measured.row.requests);
      } catch (err) {
        gatewayMetricsSkipped = (err as Error).message;
      }
    }

    const gatewayRow = { ...measured.row, backendCpuMicrosPerRequest: echo === null ? null : (measured.cpuPerRequest.get(echo.child.pid) ?? null) };
    const result: BenchResult = {
      config: config.file,
      vmcp: config.name,
      backends: echo === null ? 'live' : 'echo',
      protocol: options.protocol,
      tool,
      connections: options.connections,
      durationSeconds: options.duration / 1000,
      warmupSeconds: options.warmup / 1000,
      machine: { node: process.version, cores: availableParallelism(), cpu: cpus()[0]?.model.trim() ?? 'unknown' },
      backend,
      backendSkipped,
      gateway: gatewayRow,
      gatewayMetrics,
      gatewayMetricsSkipped,
      ...references,
      gatewayRatios: gatewayRatios(gatewayRow, references.nginx, references.httpProxy),
    };
    process.stdout.write(options.json ? `${JSON.stringify(result, null, 2)}\n` : textReport(result));
    const failed = [backend, references.nginx, references.httpProxy, measured.row].filter((r): r is RowResult => r !== null && (r.requests === 0 || r.errors.non2xx + r.errors.socket + r.errors.timeouts > 0));
    if (failed.length > 0) throw new BenchFailed(`gatehouse bench: requests failed during the run (${failed.map((r) => `${r.url}: ${JSON.stringify(r.errors)}`).join('; ')}): the figures are not those of successful calls`);
  } finally {
    for (const child of children.reverse()) await child.stop();
    process.off('exit', removeDir);
    removeDir();
  }
}
