/**
 * The sockets the gateway server listens on: Gatehouse's own HTTP/1.1 server (http/wire/, the
 * default) or node:http (`engine: node`), with the connection limits and timeouts of `server`;
 * and the admin listener, when /status and /metrics have one of their own.
 */
import type { EventEmitter } from 'node:events';
import { createServer, ServerResponse, type Server as HttpServer } from 'node:http';
import { limitedResponse } from './limited-response.ts';
import type { AddressInfo } from 'node:net';
import type { AdminListenerConfig, ConnectionLimits, ServerEngine } from '../config/server-settings.ts';
import { OriginGuard } from '../http/origin-guard.ts';
import type { HttpRequest, HttpResponse } from '../http/types.ts';
import { WireServer, type DropReason, type WireHandler } from '../http/wire/server.ts';
import type { GatewayMetrics } from '../observe/metrics.ts';

const KEEP_ALIVE_MS = 65_000;
const HEADERS_TIMEOUT_MS = 30_000;
/** nginx's client_body_timeout default. */
const REQUEST_TIMEOUT_MS = 60_000;

/** What one client may hold when the options give no `limits` (the config's defaults). */
export const DEFAULT_LIMITS: ConnectionLimits = { maxConnections: 10_000, maxPipelinedRequests: 16, maxSessionRequests: 64, maxStreamBuffer: 4 * 1024 * 1024, sendTimeoutMs: 60_000 };

/** What the server needs of a listener; node:http's Server and WireServer both are one. */
export interface Listener extends EventEmitter {
  listen(port: number, host: string, callback: () => void): unknown;
  address(): AddressInfo | string | null;
  close(callback?: (err?: Error) => void): unknown;
  closeIdleConnections(): void;
  closeAllConnections(): void;
}

export type RequestListener = (req: HttpRequest, res: HttpResponse) => void;

export interface ListenerSettings {
  readonly engine?: ServerEngine;
  /** A whole request (head and body) must arrive within this, else 408 (0: no limit). */
  readonly requestTimeoutMs?: number;
  readonly limits: ConnectionLimits;
}

/** The public listener, not listening yet; the connections it refuses are counted in `metrics`. */
export function createListener(onRequest: RequestListener, settings: ListenerSettings, metrics: GatewayMetrics): Listener {
  const { limits } = settings;
  const requestTimeoutMs = settings.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  // node:http wants the head's limit within the request's.
  const headersTimeoutMs = requestTimeoutMs > 0 ? Math.min(HEADERS_TIMEOUT_MS, requestTimeoutMs) : HEADERS_TIMEOUT_MS;
  if (settings.engine === 'node') {
    // node:http enforces the connection limit (it closes the extra socket without an answer);
    // maxStreamBuffer and sendTimeout are added to its response (limited-response.ts). maxPipelinedRequests is
    // the Gatehouse engine's alone (node:http answers a connection's requests one at a time).
    const http = createServer(
      {
        noDelay: true,
        requestTimeout: requestTimeoutMs,
        headersTimeout: headersTimeoutMs,
        keepAliveTimeout: KEEP_ALIVE_MS,
        connectionsCheckingInterval: 1_000,
        ServerResponse: limits.maxStreamBuffer > 0 || limits.sendTimeoutMs > 0 ? limitedResponse(limits, metrics) : ServerResponse,
      },
      onRequest,
    );
    if (limits.maxConnections > 0) http.maxConnections = limits.maxConnections;
    http.on('drop', () => metrics.limited('max_connections'));
    return http;
  }
  const wire = new WireServer(onRequest as WireHandler, {
    keepAliveTimeoutMs: KEEP_ALIVE_MS,
    headersTimeoutMs,
    requestTimeoutMs,
    maxConnections: limits.maxConnections,
    maxPipelinedRequests: limits.maxPipelinedRequests,
    maxStreamBuffer: limits.maxStreamBuffer,
    sendTimeoutMs: limits.sendTimeoutMs,
  });
  wire.on('dropped', (reason: DropReason) => metrics.limited(reason));
  metrics.connections = () => wire.connectionCount;
  return wire;
}

/** The admin listener, listening: the server, its address, and the Host check for its requests. */
export interface AdminListener {
  readonly http: HttpServer;
  readonly guard: OriginGuard;
  readonly address: AddressInfo;
}

export async function listenAdmin(admin: AdminListenerConfig, onRequest: RequestListener): Promise<AdminListener> {
  const http = createServer({ noDelay: true, requestTimeout: 10_000, headersTimeout: 10_000 }, onRequest);
  await listenOn(http, admin.port, admin.host);
  const address = http.address() as AddressInfo;
  // Its own names only, and no browser origin: an unauthenticated loopback port must not be
  // readable from a page that rebinds a name to 127.0.0.1.
  const guard = new OriginGuard({ host: admin.host, port: address.port, publicUrls: [], allowedHosts: [], allowedOrigins: [] });
  return { http, guard, address };
}

/** Listens, or rejects with the listen error (EADDRINUSE, EACCES...). */
export function listenOn(server: Listener | HttpServer, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.removeListener('error', onError);
      resolve();
    });
  });
}
