/** What `gatehouse bench` prints: a table for a person, or (`--json`) the whole result as one JSON document. */
import type { LoadResult } from './load.ts';
import type { GatewayTimes } from './metrics.ts';

export interface RowResult extends LoadResult {
  /** Where the load went. */
  url: string;
  /** CPU time of the process that answered (the gateway; the backend, called directly) per request, µs; null where /proc is not there or the process is not the bench's. */
  cpuMicrosPerRequest: number | null;
  /** CPU of the machine's other processes (not the bench, the gateway, the echo backend; kernel threads left out) during the run, in % of every core: over 10 %, rerun before quoting the figures. */
  otherProcessesCpuPercent: number | null;
}

export interface BenchResult {
  config: string;
  vmcp: string;
  /** `echo`: the built-in echo backend stood in for every MCPServer; `live`: the configured backends. */
  backends: 'echo' | 'live';
  protocol: string;
  tool: string;
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
  machine: { node: string; cores: number; cpu: string };
  /** The backend called directly, without the gateway (null: see backendSkipped). */
  backend: RowResult | null;
  backendSkipped: string | null;
  /** Through the gateway; `backendCpuMicrosPerRequest`: the echo backend's CPU per request meanwhile. */
  gateway: RowResult & { backendCpuMicrosPerRequest: number | null };
  /** What the gateway's own metrics say over the measured run (null: see gatewayMetricsSkipped). */
  gatewayMetrics: GatewayTimes | null;
  gatewayMetricsSkipped: string | null;
  /** nginx as a keep-alive reverse proxy in front of the same echo backend, the same request and load (null: see nginxSkipped). */
  nginx: RowResult | null;
  nginxSkipped: string | null;
  /** A bare http-proxy with a keep-alive agent, likewise (null: see httpProxySkipped). */
  httpProxy: RowResult | null;
  httpProxySkipped: string | null;
  /** The gateway's CPU per request and p99 ÷ each reference's (null where either is not known). */
  gatewayRatios: GatewayRatios;
}

export interface GatewayRatios {
  cpuVsNginx: number | null;
  p99VsNginx: number | null;
  cpuVsHttpProxy: number | null;
  p99VsHttpProxy: number | null;
}

const ratio = (a: number | null | undefined, b: number | null | undefined): number | null =>
  a === null || a === undefined || b === null || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b <= 0 ? null : a / b;

/** The gateway's row against the references' (each may be missing). */
export function gatewayRatios(gateway: RowResult, nginx: RowResult | null, httpProxy: RowResult | null): GatewayRatios {
  return {
    cpuVsNginx: ratio(gateway.cpuMicrosPerRequest, nginx?.cpuMicrosPerRequest),
    p99VsNginx: ratio(gateway.latencyMs.p99, nginx?.latencyMs.p99),
    cpuVsHttpProxy: ratio(gateway.cpuMicrosPerRequest, httpProxy?.cpuMicrosPerRequest),
    p99VsHttpProxy: ratio(gateway.latencyMs.p99, httpProxy?.latencyMs.p99),
  };
}

const num = (n: number | null | undefined, digits: number): string =>
  n === null || n === undefined || !Number.isFinite(n) ? '—' : n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

function table(header: string[], rows: string[][], rightFrom = 1): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i < rightFrom ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

export function textReport(r: BenchResult): string {
  const out: string[] = [];
  const echo = r.backends === 'echo' ? 'the built-in echo backend standing in for every MCPServer' : 'the configured backends (--live)';
  out.push(`gatehouse bench: VirtualMCPServer/${r.vmcp} (${r.config})`);
  out.push(`  in front of ${echo}`);
  out.push(`  tools/call ${r.tool}, protocol ${r.protocol}, ${r.connections} connections, ${r.durationSeconds} s after ${r.warmupSeconds} s of warm-up`);
  out.push(`  node ${r.machine.node}, ${r.machine.cores} cores, ${r.machine.cpu}`);
  out.push('');
  const row = (name: string, x: RowResult): string[] => [
    name,
    num(x.requestsPerSecond, 0),
    num(x.latencyMs.p50, 2),
    num(x.latencyMs.p99, 2),
    num(x.cpuMicrosPerRequest, 1),
    String(x.errors.non2xx + x.errors.socket + x.errors.timeouts),
  ];
  const rows: string[][] = [];
  if (r.backend !== null) rows.push(row('backend, called directly', r.backend));
  if (r.nginx !== null) rows.push(row('nginx in front of it', r.nginx));
  if (r.httpProxy !== null) rows.push(row('http-proxy in front of it', r.httpProxy));
  rows.push(row('through the gateway', r.gateway));
  if (r.backend !== null) {
    rows.push([
      'gateway adds',
      '',
      `+${num(r.gateway.latencyMs.p50 - r.backend.latencyMs.p50, 2)}`,
      `+${num(r.gateway.latencyMs.p99 - r.backend.latencyMs.p99, 2)}`,
      '',
      '',
    ]);
  }
  out.push(table(['', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'errors'], rows));
  if (r.backendSkipped !== null) out.push(`(backend called directly: not measured: ${r.backendSkipped})`);
  if (r.nginxSkipped !== null) out.push(`(nginx: not measured: ${r.nginxSkipped})`);
  if (r.httpProxySkipped !== null) out.push(`(http-proxy: not measured: ${r.httpProxySkipped})`);
  if (r.nginx !== null || r.httpProxy !== null) {
    const times = (n: number | null): string => (n === null ? '—' : `${num(n, 2)}×`);
    const g = r.gatewayRatios;
    out.push('');
    out.push(
      table(
        ['the gateway ÷', 'CPU µs/req', 'p99 ms'],
        [
          ...(r.nginx === null ? [] : [['nginx', times(g.cpuVsNginx), times(g.p99VsNginx)]]),
          ...(r.httpProxy === null ? [] : [['http-proxy', times(g.cpuVsHttpProxy), times(g.p99VsHttpProxy)]]),
        ],
      ),
    );
    out.push('The references: reverse proxies with kept-alive backend connections, in front of the same echo backend, given the same request and load.');
  }
  if (r.gateway.cpuMicrosPerRequest !== null) {
    out.push(`CPU µs/req: the answering process's user+system time (all its threads) over the run, per request.`);
  }
  if (r.gateway.backendCpuMicrosPerRequest !== null) out.push(`The echo backend took ${num(r.gateway.backendCpuMicrosPerRequest, 1)} µs/req during the gateway's run.`);
  const noisy = [r.backend, r.nginx, r.httpProxy, r.gateway].filter((x): x is RowResult => x !== null && (x.otherProcessesCpuPercent ?? 0) > 10);
  if (noisy.length > 0) {
    const live = r.backends === 'live' ? ' (with --live, backends running on this machine count among them)' : '';
    out.push(`⚠ other processes${live} took up to ${num(Math.max(...noisy.map((x) => x.otherProcessesCpuPercent ?? 0)), 0)} % of the machine during a run: rerun before quoting these figures.`);
  }
  out.push('');
  if (r.gatewayMetrics === null) {
    out.push(`Plugin phases: not read (${r.gatewayMetricsSkipped ?? 'unknown'})`);
  } else {
    const m = r.gatewayMetrics;
    out.push(`The gateway's own metrics over the measured run (gatehouse_plugin_phase_seconds and friends):`);
    out.push(`  mean time on the MCP endpoint ${num(m.requestMeanMs, 3)} ms, of which waiting for the backend's response headers ${num(m.backendMeanMs, 3)} ms`);
    if (m.phases.length === 0) out.push('  no plugin hook ran');
    else {
      out.push('');
      out.push(
        table(
          ['plugin', 'phase', 'calls/req', 'µs/call', 'µs/req'],
          m.phases.map((p) => [p.plugin, p.phase, num(p.callsPerRequest, 2), num(p.microsPerCall, 2), num(p.microsPerRequest, 2)]),
          2,
        ),
      );
    }
  }
  const errors = [r.backend, r.nginx, r.httpProxy, r.gateway].filter((x): x is RowResult => x !== null && x.errors.non2xx + x.errors.socket + x.errors.timeouts > 0);
  for (const x of errors) out.push(`⚠ ${x.url}: ${x.errors.non2xx} responses outside 2xx, ${x.errors.socket} socket errors, ${x.errors.timeouts} timeouts`);
  return `${out.join('\n')}\n`;
}
