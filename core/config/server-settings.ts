/**
 * The `server` section both servers share (`VirtualMCPServer.spec.server`, the registry's
 * `server`): its schema and the settings it resolves to (gateway-server.ts `listenerOptions`
 * turns them into the HTTP server's options). Only the body cap's default differs.
 */
import { z } from 'zod';
import { durationSchema } from './duration.ts';
import { adminListener, allowedHost, allowedOrigin, trustedProxy } from './formats.ts';
import { sizeSchema } from './size.ts';

/** `server.admin`: where /status and /metrics answer without authentication. */
export interface AdminListenerConfig {
  readonly host: string;
  readonly port: number;
}

/** `gatehouse`: Gatehouse's own HTTP/1.1 server (the default); `node`: node:http. */
export type ServerEngine = 'gatehouse' | 'node';

/** `server.workers`: processes serving the port, or `auto` (one per core the process may use). */
export type WorkersSetting = number | 'auto';

/** The most `server.workers` may be: more processes than this is a mistake, not a machine. */
export const MAX_WORKERS = 64;

export interface ServerSettings {
  /** Request body cap (`maxBodySize`). */
  readonly maxBodyBytes: number;
  /** Extra `Host` values accepted besides the server's own addresses and public URLs. `*` accepts any. */
  readonly allowedHosts: readonly string[];
  /** Browser origins accepted besides the server's own. `*` accepts any. */
  readonly allowedOrigins: readonly string[];
  /** How long SIGTERM waits for in-flight requests (`shutdownGracePeriod`, default 10s). */
  readonly shutdownGraceMs: number;
  /** A whole request, head and body, must arrive within this (`requestTimeout`, default 60s; 0: no limit). */
  readonly requestTimeoutMs: number;
  /** One log line per request (default false). */
  readonly accessLog: boolean;
  readonly engine: ServerEngine;
  /** The separate listener of /status and /metrics, or null (they need auth on the public port). */
  readonly admin: AdminListenerConfig | null;
  /** Proxies (addresses, CIDR ranges) whose X-Forwarded-For names the client (default none). */
  readonly trustedProxies: readonly string[];
  readonly limits: ConnectionLimits;
  /** Processes serving the port (`workers`, default 1: this process alone); see plugins/cli/workers/. */
  readonly workers: WorkersSetting;
}

/** What one client may hold of the server (`server.maxConnections` and the rest; 0: no limit). */
export interface ConnectionLimits {
  /** Open client connections (default 10,000): one more is answered 503 and closed. */
  readonly maxConnections: number;
  /** Unanswered requests on one connection before it stops being read (default 16). */
  readonly maxPipelinedRequests: number;
  /** Requests in flight in one MCP session, its GET stream included (default 64): more get 429. */
  readonly maxSessionRequests: number;
  /** Bytes waiting for a client past which a stream's next write drops the connection (default 4 MiB). */
  readonly maxStreamBuffer: number;
  /** How long bytes may wait for a client that takes none before the connection is dropped (default 60 s). */
  readonly sendTimeoutMs: number;
}

/** The section's schema, with the body cap defaulting to `defaultMaxBodyBytes`; resolves to ServerSettings. */
export function serverSettingsSchema(defaultMaxBodyBytes: number) {
  return z
    .strictObject({
      maxBodySize: sizeSchema.default(defaultMaxBodyBytes),
      allowedHosts: z.array(allowedHost).default([]),
      allowedOrigins: z.array(allowedOrigin).default([]),
      shutdownGracePeriod: durationSchema({ allowZero: true }).default(10_000),
      requestTimeout: durationSchema({ allowZero: true }).default(60_000),
      accessLog: z.boolean().default(false),
      admin: adminListener.optional(),
      engine: z.enum(['gatehouse', 'node']).default('gatehouse'),
      trustedProxies: z.array(trustedProxy).default([]),
      maxConnections: z.int().min(0).default(10_000),
      maxPipelinedRequests: z.int().min(1).max(1024).default(16),
      maxSessionRequests: z.int().min(0).default(64),
      maxStreamBuffer: sizeSchema.default(4 * 1024 * 1024),
      sendTimeout: durationSchema({ allowZero: true }).default(60_000),
      workers: z
        .union([z.int().min(1).max(MAX_WORKERS), z.literal('auto')], {
          error: (issue) => `must be a whole number from 1 to ${MAX_WORKERS}, or auto (got ${JSON.stringify(issue.input)})`,
        })
        .default(1),
    })
    .transform(
      (server): ServerSettings => ({
        maxBodyBytes: server.maxBodySize,
        allowedHosts: server.allowedHosts,
        allowedOrigins: server.allowedOrigins,
        shutdownGraceMs: server.shutdownGracePeriod,
        requestTimeoutMs: server.requestTimeout,
        accessLog: server.accessLog,
        engine: server.engine,
        admin: server.admin === undefined ? null : { host: server.admin.address, port: server.admin.port },
        trustedProxies: server.trustedProxies,
        limits: {
          maxConnections: server.maxConnections,
          maxPipelinedRequests: server.maxPipelinedRequests,
          maxSessionRequests: server.maxSessionRequests,
          maxStreamBuffer: server.maxStreamBuffer,
          sendTimeoutMs: server.sendTimeout,
        },
        workers: server.workers,
      }),
    )
    .prefault({});
}
