/**
 * RFC 9728 OAuth 2.0 Protected Resource Metadata: the document that tells an MCP client which
 * authorization server to get a token from, and where it is served.
 *
 * URL construction (RFC 9728 §3.1, as the MCP authorization spec uses it): the well-known
 * segment goes between the host and the resource's path, so the metadata of
 * `https://mcp.example.com/mcp` is at `https://mcp.example.com/.well-known/oauth-protected-resource/mcp`.
 * The root form (`/.well-known/oauth-protected-resource`) is served too, for clients that only
 * try it. Both are public (`auth: false`), cacheable, and readable cross-origin (CORS).
 */
import { PUBLIC_DOCUMENT_HEADERS, Reply, type RouteDef } from '@gatehouse-mcp/gateway';

const WELL_KNOWN_PRM = '/.well-known/oauth-protected-resource';

export interface ProtectedResourceMetadataInput {
  /** The resource identifier: `incomingAuth.resourceUrl`, exactly. */
  readonly resource: string;
  readonly authorizationServers: readonly string[];
  /** Advertised as `scopes_supported` when not empty. */
  readonly scopes: readonly string[];
}

/** The RFC 9728 document. */
export function protectedResourceMetadata(opts: ProtectedResourceMetadataInput): object {
  const doc: Record<string, unknown> = {
    resource: opts.resource,
    authorization_servers: [...opts.authorizationServers],
    bearer_methods_supported: ['header'],
  };
  if (opts.scopes.length > 0) doc.scopes_supported = [...opts.scopes];
  return doc;
}

/** The path of the metadata document of `resourceUrl` (path-inserted form; the root form when the path is `/`). */
export function resourceMetadataPath(resourceUrl: string): string {
  const url = new URL(resourceUrl);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/+$/, '');
  return WELL_KNOWN_PRM + path;
}

/** The URL clients fetch the metadata from (the `resource_metadata` of the challenge). */
export function resourceMetadataUrl(resourceUrl: string): string {
  const url = new URL(resourceUrl);
  return url.origin + resourceMetadataPath(resourceUrl) + url.search;
}

/** GET (and HEAD) and OPTIONS of the document at the path-inserted and the root path; no token needed. */
export function protectedResourceRoutes(resourceUrl: string, doc: object): RouteDef[] {
  // Serialised once; a Reply is immutable (writeReply copies its headers), so one instance serves every request.
  const document = new Reply(200, JSON.stringify(doc), {
    'content-type': 'application/json',
    'cache-control': 'public, max-age=300',
    ...PUBLIC_DOCUMENT_HEADERS,
  });
  const preflight = Reply.empty(204, { allow: 'GET, HEAD, OPTIONS', ...PUBLIC_DOCUMENT_HEADERS });
  const paths = [...new Set([resourceMetadataPath(resourceUrl), WELL_KNOWN_PRM])];
  return paths.flatMap((path): RouteDef[] => [
    { method: 'GET', path, auth: false, anyOrigin: true, handler: () => document },
    { method: 'OPTIONS', path, auth: false, anyOrigin: true, handler: () => preflight },
  ]);
}
