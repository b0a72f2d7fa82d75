/**
 * A backend MCP server as the core sees it: resolved once from its `MCPServer` resource at start.
 */
import type { ExternalAuthConfig } from './config/vmcp-types.ts';

export interface BackendInfo {
  /** `metadata.name` of the MCPServer. */
  readonly name: string;
  readonly url: URL;
  /** `scheme://host:port` the connection pool dials. */
  readonly origin: string;
  /** Path and query sent on the request line. */
  readonly path: string;
  /** What the backend receives as `Host`: its own authority, never the client's. */
  readonly authority: string;
  /** Time allowed for the backend's response headers. */
  readonly timeoutMs: number;
  /** Outgoing credentials strategy, or null when the backend is contacted without authentication. */
  readonly auth: ExternalAuthConfig | null;
}

export function backendInfo(name: string, url: string, timeoutMs: number, auth: ExternalAuthConfig | null = null): BackendInfo {
  const parsed = new URL(url);
  return {
    name,
    url: parsed,
    origin: parsed.origin,
    path: parsed.pathname + parsed.search,
    authority: parsed.host,
    timeoutMs,
    auth,
  };
}
