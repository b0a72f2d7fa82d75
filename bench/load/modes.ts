/**
 * The load rows of the gateway's other ways to serve the same `tools/call`, next to the
 * anonymous transparent row of the same run (the targets are ratios to it):
 *
 *   aggregated   two MCPServers in the group (both the load backend), so the gateway serves its
 *                own session and routes by tool name: `priority` conflict resolution keeps the
 *                first backend's `echo` under its bare name, so the request is the very one the
 *                transparent row sends (target ≤ 1.10 × transparent).
 *   bridged      a 2026-07-28 client (no session, its envelope in `_meta`, the standard
 *                `Mcp-Method`/`Mcp-Name` headers) in front of the load backend, which speaks
 *                2025-06-18: the gateway bridges it through the backend session it holds for
 *                such clients (target ≤ 1.11 × transparent).
 *
 * The aggregate and eras benchmarks (bench/aggregate/) measure the same paths over 5 backends ×
 * 50 tools; these rows put them in the load table, the ratios table and the instruction counts.
 */
import { anonymousConfig, gatehouseRow, type GatehouseConfigContext } from './gatehouse.ts';
import { httpRequest } from './process.ts';
import type { Row } from './target.ts';
import { CALL_HEADERS } from './wrk.ts';

const INITIALIZE = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}';

/** The anonymous config with a second MCPServer on the same backend, `echo` kept by the first. */
function aggregatedConfig(ctx: GatehouseConfigContext): string {
  const second = `apiVersion: gatehouse.dev/v1alpha1
kind: MCPServer
metadata: {name: backend-2}
spec: {url: "${ctx.backendUrl}", transport: streamable-http, groupRef: bench}
---
`;
  const anonymous = anonymousConfig(ctx);
  const vmcp = 'apiVersion: gatehouse.dev/v1alpha1\nkind: VirtualMCPServer';
  const config = '  config: {groupRef: bench}';
  // A config the edits miss would measure the transparent gateway under this row's name.
  if (!anonymous.includes(vmcp) || !anonymous.includes(config)) throw new Error('bench/load/modes.ts: the anonymous config changed shape; the aggregated row cannot be made from it');
  return anonymous
    .replace(vmcp, `${second}${vmcp}`)
    .replace(config, '  config: {groupRef: bench, aggregation: {conflictResolution: priority, conflictResolutionConfig: {priorityOrder: [backend, backend-2]}}}');
}

/** An aggregated session of the gateway (initialize, then initialized): its id. */
async function gatewaySession(url: string): Promise<string> {
  const { 'mcp-session-id': _, ...headers } = CALL_HEADERS;
  const res = await httpRequest(url, 'POST', headers, INITIALIZE, 5000);
  const id = res.headers['mcp-session-id'];
  if (res.status !== 200 || typeof id !== 'string') throw new Error(`initialize: HTTP ${res.status}, no Mcp-Session-Id: ${res.body.slice(0, 200)}`);
  const initialized = await httpRequest(url, 'POST', { ...headers, 'mcp-session-id': id }, '{"jsonrpc":"2.0","method":"notifications/initialized"}', 5000);
  if (initialized.status !== 202) throw new Error(`notifications/initialized: HTTP ${initialized.status}`);
  return id;
}

const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
};

/** The bridged row's request: the same call as CALL_BODY, in a 2026-07-28 envelope. */
export const MODERN_CALL_BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' }, _meta: MODERN_META } });

export function modeRows(): Row[] {
  const aggregated = gatehouseRow({
    name: 'gatehouse (anonymous, aggregated over 2 backends)',
    label: 'aggregated',
    config: aggregatedConfig,
    prepare: async (_ctx, target) => ({ 'mcp-session-id': await gatewaySession(target.url) }),
  });
  const bridged = gatehouseRow({
    name: 'gatehouse (anonymous, 2026-07-28 client bridged to the 2025 backend)',
    label: 'bridged',
    config: anonymousConfig,
    // No session: a 2026-07-28 request stands alone. An empty value is not sent (harness).
    headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo', 'mcp-session-id': '' },
  });
  bridged.body = MODERN_CALL_BODY;
  return [aggregated, bridged];
}
