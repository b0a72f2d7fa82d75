/**
 * `gatehouse bench` as a user runs it: end to end over real sockets (the example allow-list
 * plugin's config, the echo backend, the gateway as a child process, autocannon), the fields it
 * prints (never its speed), its help, and its refusals (exit 2, nothing started).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { loadVmcpConfig } from '../../core/config/vmcp-config.ts';
import { benchConfigText } from '../../plugins/cli/bench/bench-config.ts';
import { httpProxyMissing } from '../../plugins/cli/bench/http-proxy-server.ts';
import { metricsDelta } from '../../plugins/cli/bench/metrics.ts';
import { findNginx } from '../../plugins/cli/bench/nginx.ts';
import { gatewayRatios, type BenchResult, type RowResult } from '../../plugins/cli/bench/report.ts';
import { REPO_ROOT } from '../fixtures/processes.ts';
import { runCli as run } from '../helpers/cli.ts';
import { vmcpYaml, writeConfig } from '../helpers/gateway.ts';

const EXAMPLE = join(REPO_ROOT, 'examples/plugins/vmcp-with-allowlist.yaml');
const finite = (n: unknown): boolean => typeof n === 'number' && Number.isFinite(n);

function assertRow(row: RowResult | null, what: string): asserts row is RowResult {
  assert.ok(row !== null, `${what}: measured`);
  assert.ok(row.requests > 0, `${what}: requests`);
  assert.ok(finite(row.seconds) && row.seconds > 0, `${what}: seconds`);
  assert.ok(finite(row.requestsPerSecond) && row.requestsPerSecond > 0, `${what}: requestsPerSecond`);
  for (const key of ['mean', 'p50', 'p90', 'p99', 'max'] as const) assert.ok(finite(row.latencyMs[key]), `${what}: latencyMs.${key}`);
  assert.ok(row.latencyMs.p50 <= row.latencyMs.p99 && row.latencyMs.p99 <= row.latencyMs.max, `${what}: percentiles in order`);
  assert.deepEqual(row.errors, { non2xx: 0, socket: 0, timeouts: 0 }, `${what}: errors`);
  if (process.platform === 'linux') assert.ok(finite(row.cpuMicrosPerRequest) && row.cpuMicrosPerRequest! > 0, `${what}: cpuMicrosPerRequest`);
}

describe('gatehouse bench', () => {
  it('runs end to end with a plugin and prints the figures, the CPU of each side and each plugin phase (--json)', async () => {
    const result = await run(['bench', '--config', EXAMPLE, '--duration', '2s', '--warmup', '500ms', '--connections', '4', '--json']);
    assert.equal(result.code, 0, result.stderr);
    const r = JSON.parse(result.stdout) as BenchResult;
    assert.equal(r.config, EXAMPLE);
    assert.equal(r.vmcp, 'allowlisted');
    assert.equal(r.backends, 'echo');
    assert.equal(r.protocol, '2025-11-25');
    // Both echo backends list `echo`; the allow-list lets demo_echo through, the first the gateway lists.
    assert.equal(r.tool, 'demo_echo');
    assert.deepEqual([r.connections, r.durationSeconds, r.warmupSeconds], [4, 2, 0.5]);
    assert.ok(r.machine.cores > 0 && r.machine.node === process.version);
    assertRow(r.backend, 'backend');
    assert.equal(r.backendSkipped, null);
    assertRow(r.gateway, 'gateway');
    assert.match(r.gateway.url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    assert.match(r.backend.url, /^http:\/\/127\.0\.0\.1:\d+\/mcp\/demo$/);
    if (process.platform === 'linux') assert.ok(finite(r.gateway.backendCpuMicrosPerRequest));
    assert.equal(r.gatewayMetricsSkipped, null);
    const m = r.gatewayMetrics!;
    assert.ok(m.requests >= r.gateway.requests, 'the gateway answered at least what the load generator counted');
    assert.ok(finite(m.requestMeanMs) && finite(m.backendMeanMs));
    const phase = m.phases.find((p) => p.plugin === 'tool-allowlist' && p.phase === 'onMessage');
    assert.ok(phase !== undefined, JSON.stringify(m.phases));
    // One tools/call per request, so one onMessage call per request (plus the odd scrape's nothing).
    assert.ok(Math.abs(phase.callsPerRequest - 1) < 0.01, String(phase.callsPerRequest));
    assert.ok(finite(phase.microsPerCall) && finite(phase.microsPerRequest) && phase.calls > 0);
    assert.match(result.stderr, /starting the gateway: gatehouse vmcp serve --config/);
    // The references, in front of the same echo backend: nginx where this machine has it, http-proxy (a devDependency) here.
    if (findNginx() === null) {
      assert.equal(r.nginx, null);
      assert.match(r.nginxSkipped ?? '', /^nginx not found on PATH nor at \/usr\/sbin\/nginx/);
    } else {
      assertRow(r.nginx, 'nginx');
      assert.equal(r.nginxSkipped, null);
      assert.match(r.nginx.url, /^http:\/\/127\.0\.0\.1:\d+\/mcp\/demo$/);
      assert.ok(finite(r.gatewayRatios.p99VsNginx));
      if (process.platform === 'linux') assert.ok(finite(r.gatewayRatios.cpuVsNginx));
    }
    assertRow(r.httpProxy, 'http-proxy');
    assert.equal(r.httpProxySkipped, null);
    assert.ok(finite(r.gatewayRatios.p99VsHttpProxy));
    if (process.platform === 'linux') assert.ok(finite(r.gatewayRatios.cpuVsHttpProxy));
    assert.deepEqual(Object.keys(r.gatewayRatios).sort(), ['cpuVsHttpProxy', 'cpuVsNginx', 'p99VsHttpProxy', 'p99VsNginx']);
  });

  it('the 2026-07-28 stateless form, and the table for a person without --json', async () => {
    const result = await run(['bench', '--config', EXAMPLE, '--duration', '1s', '--warmup', '0', '--connections', '2', '--protocol', '2026-07-28']);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^gatehouse bench: VirtualMCPServer\/allowlisted \(/);
    assert.match(result.stdout, /tools\/call demo_echo, protocol 2026-07-28, 2 connections, 1 s after 0 s of warm-up/);
    assert.match(result.stdout, /\n +req\/s +p50 ms +p99 ms +CPU µs\/req +errors\n/);
    assert.match(result.stdout, /\nbackend, called directly +[\d,]+ +[\d.]+ +[\d.]+ +[\d.,—]+ +0\n/);
    assert.match(result.stdout, /\nthrough the gateway +[\d,]+ +[\d.]+ +[\d.]+ +[\d.,—]+ +0\n/);
    assert.match(result.stdout, /\ntool-allowlist +onMessage +1\.00 +[\d.]+ +[\d.]+/);
    assert.match(result.stdout, /\nhttp-proxy in front of it +[\d,]+ +[\d.]+ +[\d.]+ +[\d.,—]+ +0\n/);
    assert.match(result.stdout, /\nthe gateway ÷ +CPU µs\/req +p99 ms\n/);
    assert.match(result.stdout, /\nhttp-proxy +[\d.,—]+×? +[\d.,]+×\n/);
    if (findNginx() !== null) assert.match(result.stdout, /\nnginx in front of it +[\d,]+ .*\nnginx +[\d.,—]+×? +[\d.,]+×\n/s);
  });

  it('the references are skipped with --no-reference, and one that is missing is skipped saying why', async () => {
    const none = await run(['bench', '--config', EXAMPLE, '--duration', '500ms', '--warmup', '0', '--connections', '2', '--no-reference', '--json']);
    assert.equal(none.code, 0, none.stderr);
    const r = JSON.parse(none.stdout) as BenchResult;
    assert.deepEqual([r.nginx, r.nginxSkipped, r.httpProxy, r.httpProxySkipped], [null, '--no-reference', null, '--no-reference']);
    assert.deepEqual(r.gatewayRatios, { cpuVsNginx: null, p99VsNginx: null, cpuVsHttpProxy: null, p99VsHttpProxy: null });
    const missing = await run(['bench', '--config', EXAMPLE, '--duration', '500ms', '--warmup', '0', '--connections', '2', '--nginx', '/nonexistent/nginx']);
    assert.equal(missing.code, 0, missing.stderr);
    assert.match(missing.stdout, /\n\(nginx: not measured: --nginx \/nonexistent\/nginx: not an executable file\)\n/);
    assert.doesNotMatch(missing.stdout, /\nnginx in front of it/);
    assert.match(missing.stdout, /\nhttp-proxy in front of it /);
  });

  it('--help documents the options, the backends, incoming auth and the exit codes', async () => {
    const result = await run(['bench', '--help']);
    assert.equal(result.code, 0);
    const help = result.stdout.replace(/\n +/g, ' ');
    assert.match(help, /^Usage: gatehouse bench \[options\]/);
    for (const option of ['-c, --config <FILE>', '--live', '-d, --duration <DURATION> .*\\(default: 10s\\)', '--warmup <DURATION> .*\\(default: 2s\\)', '--connections <N> .*\\(default: 32\\)', '--tool <NAME>', '--arguments <JSON>', '--protocol <VERSION>', '--token <TOKEN> .*env: GATEHOUSE_BENCH_TOKEN', '--echo-tools <NAMES>', '--no-reference', '--nginx <PATH>', '--json']) {
      assert.match(help, new RegExp(option.replace(/[<>]/g, '\\$&')), option);
    }
    assert.match(help, /gatehouse_plugin_phase_seconds/);
    assert.match(help, /Incoming auth:/);
    assert.match(help, /References \(echo mode only; --no-reference skips both\):/);
    assert.match(help, /Exit codes:/);
    assert.match((await run(['--help'])).stdout, /bench \[options\] +benchmark a virtual MCP server configuration/);
  });

  it('a bad configuration is exit 2 with its problems, and nothing is started', async () => {
    const file = await writeConfig(vmcpYaml({ backends: [{ name: 'echo', url: 'ftp://127.0.0.1:9/mcp' }] }));
    const result = await run(['bench', '--config', file, '--duration', '1s']);
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, new RegExp(`^${file.replace(/[.]/g, '\\.')}:\\d+:\\d+ MCPServer/echo spec\\.url: `));
    assert.doesNotMatch(result.stderr, /starting/);
  });

  it('incoming auth oidc without --token is exit 2, saying what to pass', async () => {
    const file = await writeConfig(
      vmcpYaml({
        backends: [{ name: 'echo', url: 'http://127.0.0.1:9/mcp' }],
        incomingAuth: '  incomingAuth:\n    type: oidc\n    resourceUrl: "http://127.0.0.1:4483/mcp"\n    oidcConfig:\n      type: inline\n      inline: {issuer: "https://issuer.example.com", clientId: gatehouse, audience: gatehouse}',
      }),
    );
    const result = await run(['bench', '--config', file]);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /has incomingAuth oidc: every request needs a bearer token from its issuer \(https:\/\/issuer\.example\.com\).*--token \(or GATEHOUSE_BENCH_TOKEN\)/);
    assert.equal((await run(['bench', '--config', file, '--connections', '0'])).code, 2);
  });
});

describe('gatehouse bench, its parts', () => {
  it('the copy of the configuration: the echo backend as every MCPServer, relative plugin modules absolute, the admin port free', async () => {
    const config = await loadVmcpConfig(EXAMPLE);
    const text = benchConfigText(config, new Map([['demo', 'http://127.0.0.1:1/mcp/demo'], ['docs', 'http://127.0.0.1:1/mcp/docs']]));
    assert.match(text, /url: "?http:\/\/127\.0\.0\.1:1\/mcp\/demo"?\n/);
    assert.match(text, /url: "?http:\/\/127\.0\.0\.1:1\/mcp\/docs"?\n/);
    assert.ok(text.includes(`module: ${join(REPO_ROOT, 'examples/plugins/tool-allowlist.ts')}`), text);
    assert.equal(text.match(/^---$/gm)?.length, 3);
    const withAdmin = await writeConfig(vmcpYaml({ backends: [{ name: 'echo', url: 'http://127.0.0.1:9/mcp' }], spec: '  server: {admin: {port: 9464}}' }));
    assert.match(benchConfigText(await loadVmcpConfig(withAdmin), null), /admin: \{ port: 0 \}/);
    assert.equal(readFileSync(withAdmin, 'utf8').includes('9464'), true, 'the file itself is left alone');
  });

  it('the copy of the configuration: a plugin named by package becomes the file it resolves to from the original\'s directory', async () => {
    const file = await writeConfig(vmcpYaml({ backends: [{ name: 'echo', url: 'http://127.0.0.1:9/mcp' }], spec: '  plugins: [{name: acme, module: acme-plugin}, {name: gone, module: no-such-plugin}]' }));
    const pkg = join(dirname(file), 'node_modules', 'acme-plugin');
    await mkdir(pkg, { recursive: true });
    await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: 'acme-plugin', type: 'module', exports: { import: './plugin.js' } }));
    await writeFile(join(pkg, 'plugin.js'), 'export default { name: "acme", create() { return { name: "acme" }; } };\n');
    const text = benchConfigText(await loadVmcpConfig(file), null);
    assert.ok(text.includes(`module: ${join(pkg, 'plugin.js')}`), text);
    assert.ok(text.includes('module: no-such-plugin'), 'one that resolves to nothing stays as written, for the gateway to report');
  });

  it('the references: where nginx is looked for, http-proxy missing from an installed gatehouse, the ratios with a row missing', () => {
    assert.equal(findNginx('/nonexistent/nginx'), null);
    const onPath = findNginx(undefined, '/nonexistent');
    assert.ok(onPath === null || onPath === '/usr/sbin/nginx', 'not on PATH: /usr/sbin/nginx or nothing');
    assert.equal(httpProxyMissing(), null, 'a devDependency of this checkout');
    assert.match(httpProxyMissing('file:///nonexistent/dir/x.js') ?? '', /^the http-proxy package is not installed here \(it is a devDependency of gatehouse/);
    const row = (cpu: number | null, p99: number): RowResult => ({ url: 'u', requests: 1, seconds: 1, requestsPerSecond: 1, latencyMs: { mean: 1, p50: 1, p90: 1, p99, max: p99 }, errors: { non2xx: 0, socket: 0, timeouts: 0 }, cpuMicrosPerRequest: cpu, otherProcessesCpuPercent: 0 });
    assert.deepEqual(gatewayRatios(row(30, 4), row(10, 2), null), { cpuVsNginx: 3, p99VsNginx: 2, cpuVsHttpProxy: null, p99VsHttpProxy: null });
    assert.deepEqual(gatewayRatios(row(null, 4), null, row(60, 8)), { cpuVsNginx: null, p99VsNginx: null, cpuVsHttpProxy: null, p99VsHttpProxy: 0.5 });
  });

  it('the metrics delta: per plugin and phase, per request the MCP endpoint answered', () => {
    const scrape = (calls: number, seconds: number, requests: number): string =>
      [
        '# HELP gatehouse_plugin_phase_seconds Time spent in each plugin hook, by plugin and phase',
        `gatehouse_plugin_phase_seconds_bucket{plugin="a\\"b",phase="onMessage",le="+Inf"} ${calls}`,
        `gatehouse_plugin_phase_seconds_sum{plugin="a\\"b",phase="onMessage"} ${seconds}`,
        `gatehouse_plugin_phase_seconds_count{plugin="a\\"b",phase="onMessage"} ${calls}`,
        `gatehouse_request_duration_seconds_sum{route="mcp"} ${requests * 0.002}`,
        `gatehouse_request_duration_seconds_count{route="mcp"} ${requests}`,
        `gatehouse_request_duration_seconds_count{route="/metrics"} 7`,
        `gatehouse_backend_response_seconds_sum{backend="x"} ${requests * 0.001}`,
        `gatehouse_backend_response_seconds_count{backend="x"} ${requests}`,
      ].join('\n');
    const delta = metricsDelta(scrape(10, 0.5, 10), scrape(2010, 0.504, 1010), 990);
    assert.equal(delta.requests, 1000);
    assert.ok(Math.abs(delta.requestMeanMs! - 2) < 1e-9 && Math.abs(delta.backendMeanMs! - 1) < 1e-9);
    assert.equal(delta.phases.length, 1);
    const [phase] = delta.phases;
    assert.deepEqual({ plugin: phase!.plugin, phase: phase!.phase, calls: phase!.calls, callsPerRequest: phase!.callsPerRequest }, { plugin: 'a"b', phase: 'onMessage', calls: 2000, callsPerRequest: 2 });
    assert.ok(Math.abs(phase!.microsPerCall - 2) < 1e-6 && Math.abs(phase!.microsPerRequest - 4) < 1e-6);
  });
});
