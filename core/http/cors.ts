/**
 * CORS, in one place: what the gateway tells a browser on another origin that the origin guard
 * allowed (http/origin-guard.ts decides which origins those are). A backend's own CORS headers
 * never pass: the gateway's origin policy is the only one.
 */
import { startsWithHeaderName } from '../base/header-list.ts';

/** Response headers a browser client may read: the challenge and the session id above all. */
const CORS_EXPOSED = 'mcp-session-id, mcp-protocol-version, www-authenticate, x-request-id';

/** Request headers an MCP client sends, allowed in a preflight. */
const ALLOW_HEADERS = 'authorization, content-type, accept, mcp-session-id, mcp-protocol-version, last-event-id, mcp-method, mcp-name';

/** Adds the CORS headers of an allowed `origin` (none when it is null) to a header object. */
export function addCorsHeaders(headers: Record<string, string | number>, origin: string | null): void {
  if (origin === null) return;
  headers['access-control-allow-origin'] = origin;
  headers['access-control-expose-headers'] = CORS_EXPOSED;
  headers.vary = 'origin';
}

/** The same, appended to a flat `[name, value, ...]` list. */
export function pushCorsHeaders(list: string[], origin: string | null): void {
  if (origin !== null) list.push('access-control-allow-origin', origin, 'access-control-expose-headers', CORS_EXPOSED, 'vary', 'origin');
}

export const CORS_PREFIX = 'access-control-';

/** A backend's own CORS header (its name in any letter case): dropped, the gateway sets its own. */
export function isCorsHeader(name: string): boolean {
  return startsWithHeaderName(name, CORS_PREFIX);
}

/** The answer to a preflight from an allowed origin for `methods`. */
export function preflightHeaders(methods: string): Record<string, string> {
  return { 'access-control-allow-methods': methods, 'access-control-allow-headers': ALLOW_HEADERS, 'access-control-max-age': '600' };
}

/** A public document any origin may read (protected resource metadata, discovery documents). */
export const PUBLIC_DOCUMENT_HEADERS: Readonly<Record<string, string>> = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, OPTIONS',
  'access-control-allow-headers': 'mcp-protocol-version, content-type',
  'access-control-max-age': '600',
};
