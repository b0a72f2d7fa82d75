/**
 * `GET /openapi.json`: the OpenAPI document of the registry API (openapi-document.ts). Public
 * like any API description (no token, any origin may read it), cacheable, serialised once.
 */
import { PUBLIC_DOCUMENT_HEADERS, Reply, type RouteDef } from '@gatehouse-mcp/gateway';
import { REGISTRY_OPENAPI } from './openapi-document.ts';

export function openapiRoutes(): RouteDef[] {
  // A Reply is immutable (writeReply copies its headers): one instance serves every request.
  const document = new Reply(200, JSON.stringify(REGISTRY_OPENAPI), {
    'content-type': 'application/json',
    'cache-control': 'public, max-age=300',
    ...PUBLIC_DOCUMENT_HEADERS,
  });
  const preflight = Reply.empty(204, { allow: 'GET, HEAD, OPTIONS', ...PUBLIC_DOCUMENT_HEADERS });
  return [
    { method: 'GET', path: '/openapi.json', auth: false, anyOrigin: true, handler: () => document },
    { method: 'OPTIONS', path: '/openapi.json', auth: false, anyOrigin: true, handler: () => preflight },
  ];
}
