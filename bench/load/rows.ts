/**
 * The rows of the load benchmark, in the order they run. Each row is data: a name, a role
 * (for the ratios, see target.ts), a `start()` and optional request headers.
 *
 * To add a gatehouse variant, append a `gatehouseRow({...})` with its own config generator and
 * headers, e.g.
 *
 *   gatehouseRow({
 *     name: 'gatehouse (oidc, cached token)',
 *     label: 'oidc',
 *     config: (ctx) => oidcConfig(ctx),                 // YAML with incomingAuth: {type: oidc, ...}
 *     prepare: async () => ({ authorization: `Bearer ${await mintToken()}` }),
 *   }),
 *
 * Any other row is `{ name, role, start: async (ctx) => ({ url, pids, stop }) }`.
 * `BENCH_ROWS=nginx,http-proxy` runs only the rows whose name contains one of the words (selection.ts).
 *
 * With `BENCH_COMPARE`, every gatehouse row here gets a twin on the other checkout (selection.ts).
 */
import { startBackendProcess } from './backend.ts';
import { anonymousConfig, gatehouseRow, nodeEngineConfig } from './gatehouse.ts';
import { startHttpProxy } from './http-proxy.ts';
import { startNginx } from './nginx.ts';
import { startFloorProxy } from './floor-proxy.ts';
import { embeddedAuthServerRows } from './embedded-auth.ts';
import { bearerBytesRow, oidcRow } from './oidc.ts';
import { telemetryRows } from './telemetry.ts';
import { auditRow } from './audit.ts';
import { modeRows } from './modes.ts';
import type { Row } from './target.ts';
import { workersRows } from './workers.ts';

export const rows: Row[] = [
  {
    name: 'direct backend',
    role: 'direct',
    // Its own backend process, so its peak RSS and CPU are its own.
    async start() {
      const { child, url } = await startBackendProcess('direct');
      return { url, pids: [child.pid], stop: () => child.stop() };
    },
  },
  {
    name: 'nginx',
    role: 'reference',
    start: (ctx) => startNginx(ctx.tmpDir, ctx.backendUrl),
  },
  {
    name: 'http-proxy',
    role: 'baseline',
    start: (ctx) => startHttpProxy(ctx.backendUrl),
  },
  // The floors of a Node proxy (floor-proxy.ts): bytes relayed, then the least an HTTP proxy parses and writes.
  {
    name: 'node floor (TCP relay)',
    role: 'floor',
    start: (ctx) => startFloorProxy('relay', ctx.backendUrl),
  },
  {
    name: 'node floor (HTTP, llhttp both ways)',
    role: 'floor',
    start: (ctx) => startFloorProxy('http', ctx.backendUrl),
  },
  gatehouseRow({
    name: 'gatehouse (anonymous, transparent)',
    label: 'anonymous',
    config: anonymousConfig,
  }),
  oidcRow(), // incoming auth, every request a verified-token cache hit (bench/load/oidc.ts)
  bearerBytesRow(), // the anonymous gateway sent the oidc row's bytes: what the longer request costs any proxy
  oidcRow(true), // and outgoing auth: every request an exchange-cache hit
  ...embeddedAuthServerRows(), // the embedded authorization server, without and with upstreamInject (bench/load/embedded-auth.ts)
  ...telemetryRows(), // a telemetry section enabling nothing, and tracing on at sampling 1 (bench/load/telemetry.ts)
  auditRow(), // every request an audit record, written to a file (bench/load/audit.ts)
  ...modeRows(), // aggregated over two backends, and a 2026-07-28 client bridged to the 2025 backend (bench/load/modes.ts)
  gatehouseRow({
    name: 'gatehouse (anonymous, node:http engine)',
    label: 'node-engine',
    config: nodeEngineConfig,
  }),
  ...workersRows(), // server.workers: one process and two workers, sessions in Redis (bench/load/workers.ts)
];
