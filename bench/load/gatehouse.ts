/**
 * Starts the gateway under test as a child process:
 * `node plugins/cli/bin.mjs vmcp serve --config <file> --host 127.0.0.1 --port <port>`, and waits
 * until `GET /readyz` answers 200.
 *
 * A missing `plugins/cli/bin.mjs`, a gateway that exits, or one that is not ready in time is a
 * `NotAvailable` row (with the gateway's last output as the reason), never a failed run.
 *
 * Variants (other auth modes, more plugins) are rows built with `gatehouseRow()`: a config
 * generator, and optional static headers or a `prepare` step that yields headers (e.g. a token
 * minted once the row has started an issuer).
 *
 * With `BENCH_COMPARE`, each gatehouse row has a twin (selection.ts, `withTwins`) whose context names
 * the other checkout: `startGatehouse` then runs that checkout's `plugins/cli/bin.mjs`, with it
 * as the working directory, on the same generated config (checkout.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assertRunnable, fileSuffix, thisCheckoutOf } from './checkout.ts';
import { freePort, httpRequest, profileArgs, spawnChild, startTimeout, waitUntil } from './process.ts';
import { NotAvailable, type Row, type RowContext, type Target } from './target.ts';

export { GATEHOUSE_BIN, REPO_ROOT } from './checkout.ts';
/** Where each gateway process writes its CPU profile with BENCH_PROFILE_DIR (process.ts). */
export { profileArgs } from './process.ts';

export interface GatehouseConfigContext {
  backendUrl: string;
  /** The port the gateway will listen on (known before start, for `resourceUrl`). */
  port: number;
  tmpDir: string;
}

/**
 * A vMCP config: one group with the one backend, behind `incomingAuth` (YAML lines indented by
 * four spaces, each ending in a newline); with `outgoing`, the backend refers to the
 * MCPExternalAuthConfig `ref`, one of the `documents` added to the file.
 */
export function vmcpConfig({ backendUrl, port }: GatehouseConfigContext, incomingAuth: string, outgoing: { ref: string; documents: string } | null = null): string {
  const authRef = outgoing === null ? '' : `, externalAuthConfigRef: {name: ${outgoing.ref}}`;
  return `apiVersion: gatehouse.dev/v1alpha1
kind: MCPGroup
metadata: {name: bench}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPServer
metadata: {name: backend}
spec: {url: "${backendUrl}", transport: streamable-http, groupRef: bench${authRef}}
---
${outgoing === null ? '' : `${outgoing.documents}\n---\n`}
apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: bench}
spec:
  config: {groupRef: bench}
  incomingAuth:
    resourceUrl: "http://127.0.0.1:${port}/mcp"
${incomingAuth}  outgoingAuth: {source: discovered}
`;
}

/** The anonymous, transparent vMCP: one group with the one backend, no incoming auth. */
export const anonymousConfig = (ctx: GatehouseConfigContext): string => vmcpConfig(ctx, '    type: anonymous\n');

/** The same gateway on node:http (`spec.server.engine: node`), to measure the engine choice. */
export function nodeEngineConfig(ctx: GatehouseConfigContext): string {
  return anonymousConfig(ctx) + '  server: {engine: node}\n';
}

export interface GatehouseStartOptions {
  /** A file-name-safe label for the config file. */
  label: string;
  config: (ctx: GatehouseConfigContext) => string;
  /** Extra environment of the gateway process. */
  env?: Record<string, string>;
  /** Path of the MCP endpoint (default `/mcp`). */
  path?: string;
  /** The port to listen on, when the row had to know it first (default: a free one). */
  port?: number;
  /**
   * A log line the gateway prints once it all serves, waited for after /readyz (workers.ts: every
   * worker ready); by default its "listening" line naming the port.
   */
  readyLine?: RegExp;
}

/**
 * A gateway that did not get ready, as `NotAvailable`: first line for the table, what happened
 * and the gateway's own error line (e.g. an older checkout refusing a config field it does not
 * know); then the tail of its output.
 */
export function startFailure(err: unknown, output: string): NotAvailable {
  const lines = output.trim().split('\n');
  const key = lines.find((l) => /(^|\s)(\w*Error\b|error:)/i.test(l)) ?? lines[lines.length - 1] ?? '';
  const what = ((err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '').replace(/:$/, '');
  return new NotAvailable(`${what}${key.trim() === '' ? '' : `: ${key.trim()}`}\n${lines.slice(-12).join('\n')}`);
}

/** Starts the gateway; throws `NotAvailable` when it is missing or does not get ready. */
export async function startGatehouse(ctx: RowContext, opts: GatehouseStartOptions): Promise<Target> {
  const checkout = ctx.checkout ?? thisCheckoutOf();
  assertRunnable(checkout);
  const label = `${opts.label}${fileSuffix(ctx.checkout)}`;
  const port = opts.port ?? (await freePort());
  const dir = join(ctx.tmpDir, 'gatehouse');
  mkdirSync(dir, { recursive: true });
  const configFile = join(dir, `${label}.yaml`);
  writeFileSync(configFile, opts.config({ backendUrl: ctx.backendUrl, port, tmpDir: ctx.tmpDir }));

  const child = spawnChild(
    `gatehouse${fileSuffix(ctx.checkout)}`,
    process.execPath,
    // JSON at info at least: the listening line is read (a stricter GATEHOUSE_LOG_LEVEL would hide it).
    [...profileArgs(label), checkout.bin, 'vmcp', 'serve', '--config', configFile, '--host', '127.0.0.1', '--port', String(port), '--log-format', 'json', '--log-level', benchLogLevel()],
    { cwd: checkout.root, env: { ...process.env, ...opts.env } },
  );
  const timeoutMs = startTimeout(Number(process.env['BENCH_START_TIMEOUT'] ?? 20) * 1000);
  // Listened for from the start: the line may come before /readyz answers. Waited for even when
  // /readyz answers: the port was free when picked, not when the gateway binds it, and another
  // process that took it meanwhile (a test's gateway, beside the bench) answers /readyz too,
  // while this gateway exits with EADDRINUSE. Its own line says the port is its.
  const line = child.waitForLine(opts.readyLine ?? listeningLine(port), timeoutMs);
  line.catch(() => {});
  try {
    await waitUntil(
      'GET /readyz to answer 200',
      async () => (await httpRequest(`http://127.0.0.1:${port}/readyz`, 'GET', {}, undefined, 1000)).status === 200,
      timeoutMs,
      child,
    );
    await line;
  } catch (err) {
    await child.stop();
    throw startFailure(err, child.output());
  }
  return {
    url: `http://127.0.0.1:${port}${opts.path ?? '/mcp'}`,
    pids: [child.pid],
    stop: () => child.stop(5000),
  };
}

/** GATEHOUSE_LOG_LEVEL when it logs info lines (debug, trace), else info. */
function benchLogLevel(): string {
  const level = process.env['GATEHOUSE_LOG_LEVEL'];
  return level === 'debug' || level === 'trace' ? level : 'info';
}

/** The gateway's JSON log line saying it listens, on `port` (virtual-mcp-server.ts; pino writes `msg` last). */
function listeningLine(port: number): RegExp {
  return new RegExp(`"url":"http://127\\.0\\.0\\.1:${port}/.*"msg":"virtual MCP server listening"`);
}

export interface GatehouseRowOptions extends GatehouseStartOptions {
  name: string;
  headers?: Record<string, string>;
  /** Runs after the gateway is ready; the headers it returns are sent with every request. */
  prepare?: (ctx: RowContext, target: Target) => Promise<Record<string, string>>;
}

/** A gatehouse row (role `subject`): compared with http-proxy and nginx. */
export function gatehouseRow(opts: GatehouseRowOptions): Row {
  const row: Row = {
    name: opts.name,
    role: 'subject',
    async start(ctx) {
      const target = await startGatehouse(ctx, opts);
      if (opts.prepare === undefined) return target;
      try {
        return { ...target, headers: await opts.prepare(ctx, target) };
      } catch (err) {
        await target.stop();
        throw err;
      }
    },
  };
  if (opts.headers !== undefined) row.headers = opts.headers;
  return row;
}
