/**
 * The building blocks the registry's OpenAPI document is written with (openapi-document.ts for
 * the consumer and publish API, openapi-admin.ts for the admin API): references to its
 * components, JSON bodies, and the error responses, whose body is always the `Error` component
 * (`{"error": "<code>", "error_description": "…"}`, plugins/registry/errors.ts).
 */

export type Json = Record<string, unknown>;

export const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
export const json = (schema: Json): Json => ({ 'application/json': { schema } });

/** What each error status means on the consumer and publish API (an operation may say it its own way). */
const WHY: Readonly<Record<number, string>> = {
  400: 'The request is not valid: the description names each problem (for a server.json, each failing JSON path)',
  401: 'A bearer token is required (oauth mode), or the one sent is not valid',
  403: 'The caller may not do this: the registry\'s claims (forbidden), a role (insufficient_permissions), a registry without a managed source (not_publishable), the managed source\'s claims or publish claims (claims_not_held)',
  404: 'The registry, or the entry or version, is not found (or not visible to the caller)',
  409: 'The version exists, or existed and was deleted (version_exists: versions are immutable); the name is provided by another source (name_conflict); the claims differ from the entry\'s (claims_mismatch)',
  413: 'The body is over the server\'s maxBodySize',
  415: 'The body is not declared JSON',
};

/** Error responses for `codes`, each with the `Error` body; `why` gives an operation's own descriptions. */
export function errors(codes: readonly number[], why: Readonly<Record<number, string>> = {}): Json {
  return Object.fromEntries(codes.map((code) => [String(code), { description: why[code] ?? WHY[code], content: json(ref('Error')) }]));
}
