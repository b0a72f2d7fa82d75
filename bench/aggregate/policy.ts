/**
 * Per-user tool policy benchmark (`npm run bench -- --policy-only`; also part of the full run):
 * what the claims filter and Cedar cost per request on a cached view. One aggregated gateway
 * over 5 backends × 50 tools per row, every row with the same OIDC incoming auth (a loopback
 * issuer, one bearer JWT, a verified-token cache hit on every measured request):
 *
 *   oidc            no policy: the baseline
 *   oidc + claims   the claims filter: an authz-claims annotation on every backend (the caller
 *                   holds four of five) and claims on a few tools of each
 *   oidc + cedar    Cedar: ToolHive-style policies (group from a claim, a forbid)
 *
 * For each row, `tools/call` and `tools/list` (the caller's whole list, one page, the session's
 * cached view) CPU µs per request of the gateway process, with wrk in one session; BENCH_ROUNDS
 * rounds alternate the order of the rows, medians compared. Each policy row ÷ oidc is the figure
 * (target ≤ 1.05). Results: printed and written to bench/results/policy.json.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startIssuer } from '../load/oidc.ts';
import { RESULTS_DIR } from '../load/harness.ts';
import { freePort, spawnNodeScript, stopAll, waitUntil } from '../load/process.ts';
import { startGateway, type Gateway, gatewayCpu } from './gateway.ts';
import { HEADERS, rpc } from './run.ts';

const BACKENDS = 5;
const TOOLS = 50;
const SECONDS = Number(process.env['BENCH_DURATION'] ?? 10);
const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 32);
const ROUNDS = Math.max(1, Number(process.env['BENCH_ROUNDS'] ?? 1));
const AUDIENCE = 'gatehouse-bench';

/** The caller's claims: nine, with groups and roles as lists, as a real access token has. */
export const CALLER_CLAIMS = {
  groups: ['eng', 'ops', 'all-staff'],
  roles: ['developer', 'reader'],
  team: 'core',
  department: 'platform',
  region: 'eu',
  tier: 'gold',
  email: 'bench@example.com',
};

type Policy = 'oidc' | 'claims' | 'cedar';
/** BENCH_POLICY_ROWS=claims (say) measures that row with the baseline only. */
const POLICIES: readonly Policy[] = (['oidc', 'claims', 'cedar'] as const).filter((p) => p === 'oidc' || (process.env['BENCH_POLICY_ROWS'] ?? 'claims,cedar').split(',').includes(p));

interface Backend {
  readonly name: string;
  readonly port: number;
}

/** The claims filter's configuration: every backend annotated, a few tools of each with claims of their own. */
function claimsDocuments(backends: readonly Backend[]): { annotations: (b: Backend, i: number) => string; aggregation: string } {
  const annotations = (_b: Backend, i: number): string => {
    const claims = i === BACKENDS - 1 ? { team: 'other' } : { team: 'core', region: 'eu' };
    return `, annotations: {toolhive.stacklok.dev/authz-claims: '${JSON.stringify(claims)}'}`;
  };
  const entries = backends.map((b) => `{workload: ${b.name}, authzClaims: {tools: {tool_002: {groups: eng}, tool_003: {roles: admin}, tool_004: {department: platform}}}}`);
  return { annotations, aggregation: `aggregation: {tools: [${entries.join(', ')}]}` };
}

/** ToolHive-style Cedar policies: the group from a claim, a permit on claims, a forbid. */
const CEDAR_POLICIES = [
  'permit(principal in THVGroup::"eng", action == Action::"call_tool", resource);',
  'permit(principal, action == Action::"get_prompt", resource) when { context.claim_team == "core" };',
  'permit(principal, action == Action::"read_resource", resource) when { context has claim_region && context.claim_region == "eu" };',
  'forbid(principal, action == Action::"call_tool", resource == Tool::"b4_tool_003");',
  'forbid(principal, action == Action::"call_tool", resource) when { context.claim_tier == "free" };',
];

function cedarAuthz(): string {
  const policies = CEDAR_POLICIES.map((p) => `          - '${p}'`).join('\n');
  return `    authzConfig:\n      type: inline\n      inline:\n        policies:\n${policies}\n      groupClaimName: groups\n`;
}

function configYaml(policy: Policy, backends: readonly Backend[], issuer: string, gatewayPort: number): string {
  const claims = policy === 'claims' ? claimsDocuments(backends) : null;
  const docs = ['apiVersion: gatehouse.dev/v1alpha1\nkind: MCPGroup\nmetadata: {name: bench}'];
  backends.forEach((b, i) => {
    docs.push(`apiVersion: gatehouse.dev/v1alpha1\nkind: MCPServer\nmetadata: {name: ${b.name}${claims?.annotations(b, i) ?? ''}}\nspec: {url: "http://127.0.0.1:${b.port}/mcp", groupRef: bench}`);
  });
  docs.push(
    'apiVersion: gatehouse.dev/v1alpha1\nkind: VirtualMCPServer\nmetadata: {name: bench}\nspec:\n' +
      `  config: {groupRef: bench${claims === null ? '' : `, ${claims.aggregation}`}, operational: {failureHandling: {healthCheckInterval: 0s}}}\n` +
      '  incomingAuth:\n    type: oidc\n' +
      `    resourceUrl: "http://127.0.0.1:${gatewayPort}/mcp"\n` +
      `    oidcConfig:\n      type: inline\n      inline: {issuer: "${issuer}", clientId: bench, audience: ${AUDIENCE}}\n` +
      (policy === 'cedar' ? cedarAuthz() : '') +
      '  outgoingAuth: {source: discovered}',
  );
  return docs.join('\n---\n') + '\n';
}

interface Figures {
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly cpuUsPerRequest: number;
  readonly errors: number;
}

/** One session of the caller; checks that `tool` answers and the list is what the policy leaves. */
async function sessionOf(gateway: Gateway, auth: Record<string, string>, tool: string): Promise<{ headers: Record<string, string>; tools: number }> {
  const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
  const opened = await rpc(gateway.url, init, auth);
  await opened.arrayBuffer();
  const session = opened.headers.get('mcp-session-id');
  if (session === null) throw new Error('no Mcp-Session-Id from initialize');
  const headers = { ...auth, 'mcp-session-id': session };
  await (await rpc(gateway.url, '{"jsonrpc":"2.0","method":"notifications/initialized"}', headers)).arrayBuffer();
  const listed = (await (await rpc(gateway.url, '{"jsonrpc":"2.0","id":2,"method":"tools/list"}', headers)).json()) as { result?: { tools: unknown[] } };
  const called = (await (await rpc(gateway.url, callBody(tool), headers)).json()) as { result?: unknown; error?: unknown };
  if (called.result === undefined || listed.result === undefined) throw new Error(`${tool}: ${JSON.stringify(called)} ${JSON.stringify(listed).slice(0, 200)}`);
  return { headers: { ...HEADERS, ...headers }, tools: listed.result.tools.length };
}

const callBody = (tool: string): string => JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: tool, arguments: { text: 'hi' } } });
const LIST_BODY = '{"jsonrpc":"2.0","id":3,"method":"tools/list"}';

const median = (rounds: readonly Figures[]): Figures => [...rounds].sort((a, b) => a.cpuUsPerRequest - b.cpuUsPerRequest)[Math.floor((rounds.length - 1) / 2)]!;
const ratio = (a: number, b: number): number => Math.round((a / b) * 100) / 100;

export async function runPolicy(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-policy-'));
  const { issuer, server, token } = await startIssuer({ audience: AUDIENCE, claims: CALLER_CLAIMS });
  try {
    const backendProcess = spawnNodeScript('policy-backends', join(import.meta.dirname, 'backend.ts'), ['--count', String(BACKENDS), '--tools', String(TOOLS)]);
    let ports: number[] = [];
    await waitUntil('backends listening', async () => {
      const match = /LISTENING ([\d ]+)/.exec(backendProcess.output());
      if (match !== null) ports = match[1]!.trim().split(' ').map(Number);
      return match !== null;
    }, 20_000, backendProcess);
    const backends = ports.map((port, i) => ({ name: `b${i}`, port }));
    const auth = { authorization: `Bearer ${token}` };
    const gateways = {} as Record<Policy, { gateway: Gateway; headers: Record<string, string>; tools: number }>;
    for (const policy of POLICIES) {
      const port = await freePort();
      const gateway = await startGateway(dir, `policy-${policy}`, configYaml(policy, backends, issuer, port), port);
      gateways[policy] = { gateway, ...(await sessionOf(gateway, auth, 'b0_tool_001')) };
    }
    const rounds: Record<Policy, { call: Figures; list: Figures }>[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? POLICIES : [...POLICIES].reverse();
      // Every row's tools/call, then every row's tools/list: a row's call is never measured right
      // after another row's list (whose large answers skewed the next row's figure by up to 1.2x).
      const calls = {} as Record<Policy, Figures>;
      for (const policy of order) calls[policy] = await gatewayCpu(dir, `${policy}-call-${round}`, gateways[policy].gateway, gateways[policy].headers, callBody('b0_tool_001'));
      const figures = {} as Record<Policy, { call: Figures; list: Figures }>;
      for (const policy of order) figures[policy] = { call: calls[policy], list: await gatewayCpu(dir, `${policy}-list-${round}`, gateways[policy].gateway, gateways[policy].headers, LIST_BODY) };
      rounds.push(figures);
    }
    const medians = Object.fromEntries(POLICIES.map((p) => [p, { call: median(rounds.map((r) => r[p].call)), list: median(rounds.map((r) => r[p].list)), tools: gateways[p].tools }])) as Partial<
      Record<Policy, { call: Figures; list: Figures; tools: number }>
    >;
    const over = (p: Policy) => (medians[p] === undefined ? null : { call: ratio(medians[p].call.cpuUsPerRequest, medians.oidc!.call.cpuUsPerRequest), list: ratio(medians[p].list.cpuUsPerRequest, medians.oidc!.list.cpuUsPerRequest) });
    const report = {
      date: new Date().toISOString(),
      node: process.version,
      setup: { backends: BACKENDS, toolsPerBackend: TOOLS, wrk: `-t1 -c${CONNECTIONS} -d${SECONDS}s`, rounds: ROUNDS, cedarPolicies: CEDAR_POLICIES },
      medians,
      overOidc: { claims: over('claims'), cedar: over('cedar') },
      rounds: rounds.map((r) => Object.fromEntries(POLICIES.map((p) => [p, { call: r[p].call.cpuUsPerRequest, list: r[p].list.cpuUsPerRequest }]))),
    };
    const file = join(RESULTS_DIR, 'policy.json');
    writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
    const row = (p: Policy, name: string): string => {
      const m = medians[p];
      if (m === undefined) return `| ${name} | not measured (BENCH_POLICY_ROWS) | | | | |`;
      const x = p === 'oidc' ? '' : ` (${over(p)!.call}×)`;
      const y = p === 'oidc' ? '' : ` (${over(p)!.list}×)`;
      return `| ${name} | ${m.tools} | ${m.call.cpuUsPerRequest}${x} | ${m.call.p50Ms} / ${m.call.p99Ms} | ${m.list.cpuUsPerRequest}${y} | ${m.list.p50Ms} / ${m.list.p99Ms} |`;
    };
    const lines = [
      '## Per-user tool policy',
      '',
      `${BACKENDS} backends × ${TOOLS} tools, OIDC incoming auth in every row; CPU µs per request (÷ oidc), p50 / p99 ms; medians of ${ROUNDS} alternating round(s)`,
      '',
      '| row | tools seen | tools/call CPU µs | tools/call ms | tools/list CPU µs | tools/list ms |',
      '|---|---:|---:|---:|---:|---:|',
      row('oidc', 'oidc (no policy)'),
      row('claims', 'oidc + claims filter'),
      row('cedar', 'oidc + Cedar'),
    ];
    process.stdout.write(lines.join('\n') + `\n\nwrote ${file}\n`);
  } finally {
    await stopAll();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
