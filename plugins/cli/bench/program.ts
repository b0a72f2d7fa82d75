/**
 * The `gatehouse bench` command line (commander). The work is in command.ts, imported when the
 * command runs, so that `--help` answers at once.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from '../exit-codes.ts';
import { configOption } from '../options.ts';
import type { BenchOptions } from './command.ts';

const PROTOCOLS = ['2025-11-25', '2026-07-28'];
const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000 };

/** `10s`, `500ms`, `1m`, `1.5s`; a bare number is seconds. */
function duration(allowZero: boolean) {
  return (value: string): number => {
    const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(value.trim());
    const ms = m === null ? Number.NaN : Math.round(Number(m[1]) * UNIT_MS[m[2] ?? 's']!);
    if (!Number.isFinite(ms) || ms < (allowZero ? 0 : 1) || ms > 3_600_000) throw new InvalidArgumentError(`It is not a duration${allowZero ? '' : ' above zero'} of at most 1h: a number with a unit, such as 10s, 500ms or 1m (a bare number is seconds)`);
    return ms;
  };
}

function connections(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 10_000) throw new InvalidArgumentError('It is not a number of connections (1-10000)');
  return n;
}

function jsonObject(value: string): unknown {
  try {
    const parsed = JSON.parse(value) as unknown;
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed;
  } catch {
    /* below */
  }
  throw new InvalidArgumentError('It is not a JSON object, such as \'{"text":"hello"}\'');
}

function toolNames(value: string): string[] {
  const names = value.split(',').map((n) => n.trim());
  if (names.some((n) => n === '')) throw new InvalidArgumentError('It is not a comma-separated list of tool names');
  return names;
}

const HELP = `
What it does:
  Validates FILE as "gatehouse vmcp validate" does, starts the gateway with it as "gatehouse vmcp
  serve" does (a child process, on a free loopback port), opens a client session (or the
  2026-07-28 stateless form), and drives "tools/call" with autocannon: first against the
  backend called directly, then through nginx and a bare http-proxy in front of the backend (the
  references), then through the gateway. It prints throughput, p50/p99 latency and CPU per
  request of the process that answered (from /proc: all its threads; Linux only), the gateway's
  CPU per request and p99 as ratios to nginx's and http-proxy's, and each plugin hook's time per
  request from the gateway's own metrics (gatehouse_plugin_phase_seconds{plugin,phase}, the
  difference of two scrapes around the run).

Backends:
  default  a built-in echo backend stands in for every MCPServer of the group (a copy of FILE
           gets its URL; plugins, auth, aggregation and the rest are kept). It answers every
           tools/call at once and lists the tools of --echo-tools (default: echo), so the
           figures are the gateway's own. Outgoing auth still runs as configured (its token
           exchange STS is called); the echo backend ignores the credentials.
  --live   the configured backends: the whole path as clients see it. The backend is called
           directly only when the group has one backend (without the gateway's credentials).

References (echo mode only; --no-reference skips both):
  nginx       a keep-alive reverse proxy (one worker, its own config in a temporary directory),
              found with --nginx, on PATH, or at /usr/sbin/nginx; skipped, saying why, when none.
  http-proxy  a bare http-proxy server with a keep-alive agent, when the http-proxy package is
              installed beside gatehouse (a devDependency: npm install http-proxy); else skipped.
  Both get the gateway's request (without its bearer token) on the same connections.

Incoming auth:
  anonymous  nothing to do.
  oidc       every request needs a bearer token: --token (or GATEHOUSE_BENCH_TOKEN). A token
             the running gateway accepts is accepted by the bench's gateway (same issuer,
             audience and keys; for the embedded authorization server only when its signing
             keys are configured). Without a token the bench refuses to start (exit ${EXIT_USAGE}).

Examples:
  gatehouse bench --config vmcp.yaml
  gatehouse bench --config vmcp.yaml --duration 30s --connections 64 --json > result.json
  gatehouse bench --config vmcp.yaml --live --token "$TOKEN" --tool github_list_issues --arguments '{"repo":"me/x"}'

Exit codes:
  ${EXIT_OK}  the run ended and every request succeeded
  ${EXIT_FAILURE}  the gateway or the backend did not start, the checked call failed, or requests failed during the run
  ${EXIT_USAGE}  the command line or the configuration is wrong (a bad file, oidc without --token); nothing was started`;

export function benchCommand(): Command {
  return new Command('bench')
    .description('benchmark a virtual MCP server configuration: latency, throughput, CPU per request, and each plugin hook\'s time')
    .addOption(configOption('the vMCP configuration to benchmark (as "gatehouse vmcp serve" takes it)'))
    .addOption(new Option('--live', 'call the configured backends instead of the built-in echo backend').default(false))
    .addOption(new Option('-d, --duration <DURATION>', 'measured time of each run (10s, 500ms, 1m)').default(10_000, '10s').argParser(duration(false)))
    .addOption(new Option('--warmup <DURATION>', 'load before each measured run, not counted').default(2_000, '2s').argParser(duration(true)))
    .addOption(new Option('--connections <N>', 'concurrent keep-alive connections of the load generator').default(32).argParser(connections))
    .addOption(new Option('--tool <NAME>', 'the tool to call, as clients see it (default: the first the gateway lists)'))
    .addOption(new Option('--arguments <JSON>', 'the arguments of the call').default({ text: 'hello' }, '{"text":"hello"}').argParser(jsonObject))
    .addOption(new Option('--protocol <VERSION>', '2025-11-25: an initialized session; 2026-07-28: stateless requests').choices(PROTOCOLS).default('2025-11-25'))
    .addOption(new Option('--token <TOKEN>', 'bearer token for incoming auth oidc').env('GATEHOUSE_BENCH_TOKEN'))
    .addOption(new Option('--echo-tools <NAMES>', 'tools each echo backend lists, comma-separated (backend names, before any prefix)').default(['echo'], 'echo').argParser(toolNames))
    .addOption(new Option('--no-reference', 'measure neither nginx nor http-proxy beside the gateway (faster)'))
    .addOption(new Option('--nginx <PATH>', 'the nginx binary of the reference (default: nginx on PATH, else /usr/sbin/nginx)'))
    .addOption(new Option('--json', 'print the result as one JSON document').default(false))
    .addHelpText('after', HELP)
    .action(async (options: BenchOptions) => (await import('./command.ts')).bench(options));
}
