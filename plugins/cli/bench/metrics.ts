/**
 * What the gateway's own Prometheus metrics say about a measured run: the difference of two
 * scrapes of `/metrics`, one before and one after it.
 *
 * - Each plugin phase (`gatehouse_plugin_phase_seconds{plugin,phase}`): calls and time in the
 *   run, from the histogram's `_count` and `_sum`.
 * - The MCP endpoint's time per request (`gatehouse_request_duration_seconds{route="mcp"}`)
 *   and the backends' time to response headers (`gatehouse_backend_response_seconds`), both as
 *   the gateway measured them: the difference is the gateway's own share of a request.
 */

/** One sample of the text format: `name{label="value",...} number`. */
interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The samples of a Prometheus text exposition (comments skipped). */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (m === null) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) {
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** Count and sum of one histogram, per label set (keyed by `key(labels)`). */
function histogram(samples: readonly Sample[], name: string, key: (labels: Readonly<Record<string, string>>) => string | null): Map<string, { count: number; sum: number }> {
  const out = new Map<string, { count: number; sum: number }>();
  for (const s of samples) {
    const field = s.name === `${name}_count` ? 'count' : s.name === `${name}_sum` ? 'sum' : null;
    if (field === null) continue;
    const k = key(s.labels);
    if (k === null) continue;
    const entry = out.get(k) ?? { count: 0, sum: 0 };
    entry[field] += s.value;
    out.set(k, entry);
  }
  return out;
}

export interface PhaseCost {
  plugin: string;
  phase: string;
  /** Calls of the hook during the run. */
  calls: number;
  callsPerRequest: number;
  /** Mean time of one call, µs. */
  microsPerCall: number;
  /** Time in the hook per request of the run, µs (what the plugin adds to each request). */
  microsPerRequest: number;
}

export interface GatewayTimes {
  /** Requests the MCP endpoint answered between the scrapes (what "per request" divides by). */
  requests: number;
  /** Mean time from request to the end of the response on the MCP endpoint, as the gateway measured it, ms. */
  requestMeanMs: number | null;
  /** Mean time until the backends sent their response headers, ms. */
  backendMeanMs: number | null;
  phases: PhaseCost[];
}

const SEP = '\u0000';

function meanDelta(before: Map<string, { count: number; sum: number }>, after: Map<string, { count: number; sum: number }>): number | null {
  let count = 0;
  let sum = 0;
  for (const [k, a] of after) {
    const b = before.get(k) ?? { count: 0, sum: 0 };
    count += a.count - b.count;
    sum += a.sum - b.sum;
  }
  return count > 0 ? (sum / count) * 1000 : null;
}

/**
 * What happened between two scrapes, per request: of the MCP endpoint's requests in between (the
 * gateway's count, which also has the ones still in flight when the load generator stopped
 * counting), else of `requests` (the load generator's).
 */
export function metricsDelta(beforeText: string, afterText: string, loadRequests: number): GatewayTimes {
  const [before, after] = [parseMetrics(beforeText), parseMetrics(afterText)];
  const mcp = (l: Readonly<Record<string, string>>): string | null => (l['route'] === 'mcp' ? 'mcp' : null);
  const mcpBefore = histogram(before, 'gatehouse_request_duration_seconds', mcp);
  const mcpAfter = histogram(after, 'gatehouse_request_duration_seconds', mcp);
  const answered = (mcpAfter.get('mcp')?.count ?? 0) - (mcpBefore.get('mcp')?.count ?? 0);
  const requests = answered > 0 ? answered : loadRequests;
  const phaseKey = (l: Readonly<Record<string, string>>): string | null => (l['plugin'] === undefined || l['phase'] === undefined ? null : `${l['plugin']}${SEP}${l['phase']}`);
  const phasesBefore = histogram(before, 'gatehouse_plugin_phase_seconds', phaseKey);
  const phases: PhaseCost[] = [];
  for (const [k, a] of histogram(after, 'gatehouse_plugin_phase_seconds', phaseKey)) {
    const b = phasesBefore.get(k) ?? { count: 0, sum: 0 };
    const calls = a.count - b.count;
    if (calls <= 0) continue;
    const micros = (a.sum - b.sum) * 1e6;
    const [plugin = '', phase = ''] = k.split(SEP);
    phases.push({
      plugin,
      phase,
      calls,
      callsPerRequest: requests > 0 ? calls / requests : Number.NaN,
      microsPerCall: micros / calls,
      microsPerRequest: requests > 0 ? micros / requests : Number.NaN,
    });
  }
  const anyBackend = (l: Readonly<Record<string, string>>): string | null => l['backend'] ?? null;
  return {
    requests,
    requestMeanMs: meanDelta(mcpBefore, mcpAfter),
    backendMeanMs: meanDelta(histogram(before, 'gatehouse_backend_response_seconds', anyBackend), histogram(after, 'gatehouse_backend_response_seconds', anyBackend)),
    phases,
  };
}
