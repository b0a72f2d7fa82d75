/**
 * Extracts the bearer token of a request (RFC 6750 §2.1, as the MCP authorization spec
 * restricts it): only from one `Authorization: Bearer <token>` header. A token in the query
 * string (`access_token=`) is refused, as is a second Authorization header (Node keeps only the
 * first in `req.headers`, so duplicates are counted in `req.rawHeaders`).
 *
 * Every refusal is a 401 `invalid_request` (core/README.md, Decisions), so that the client also gets the
 * `WWW-Authenticate` challenge that tells it where to authenticate.
 *
 * Hot path: a few character comparisons and one slice; no regex, no allocation but the token.
 */
import type { HttpRequest } from '@gatehouse-mcp/gateway';
import { badBearerRequest } from './errors.ts';

const AUTHORIZATION = 'authorization';
const BEARER = 'bearer';

/** True when the query string carries an `access_token` parameter (also percent-encoded). */
function hasQueryToken(query: string): boolean {
  if (query === '') return false;
  if (query.startsWith('access_token=') || query.includes('&access_token=')) return true;
  // Rare forms (`access%5Ftoken`, `access_token` without `=`): decode only when the name could be there.
  if (!/access/i.test(query)) return false;
  try {
    return new URLSearchParams(query).has('access_token');
  } catch {
    return false;
  }
}

/** The first Authorization value in `raw` (Node's rawHeaders) and how many there are, in one pass. */
function authorizationOf(raw: readonly string[]): { value: string | undefined; count: number } {
  let value: string | undefined;
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === AUTHORIZATION.length && name.toLowerCase() === AUTHORIZATION) {
      value ??= raw[i + 1];
      count++;
    }
  }
  return { value, count };
}

/** Case-insensitive `Bearer` followed by at least one space (RFC 7235 auth-scheme is case-insensitive). */
function isBearerScheme(value: string): boolean {
  if (value.length < 7 || value.charCodeAt(6) !== 32) return false;
  for (let i = 0; i < 6; i++) {
    if ((value.charCodeAt(i) | 0x20) !== BEARER.charCodeAt(i)) return false;
  }
  return true;
}

/**
 * The bearer token of `req`. Throws a 401 `invalid_request` GatewayError when there is none,
 * when it is in the query string, when Authorization is repeated or uses another scheme.
 * `query` is the raw query string without `?` (`Context.query`). Reads `req.rawHeaders` only
 * (building `req.headers` costs more than this whole function).
 */
export function bearerTokenOf(req: Pick<HttpRequest, 'rawHeaders'>, query: string): string {
  const { value, count } = authorizationOf(req.rawHeaders);
  return bearerTokenFrom(value, count, query);
}

/**
 * The same, from an already parsed Authorization value and the number of Authorization headers
 * (the gateway's `ctx.head.authorization` / `ctx.head.authorizationCount`).
 */
export function bearerTokenFrom(value: string | undefined, count: number, query: string): string {
  if (hasQueryToken(query)) {
    throw badBearerRequest('access tokens must be sent in the Authorization header, not in the query string');
  }
  if (value === undefined || value === '') {
    throw badBearerRequest('this resource requires a bearer token in the Authorization header');
  }
  if (count > 1) throw badBearerRequest('the request has more than one Authorization header');
  if (!isBearerScheme(value)) throw badBearerRequest('the Authorization header must use the Bearer scheme');
  let start = 7;
  while (start < value.length && value.charCodeAt(start) === 32) start++;
  let end = value.length;
  while (end > start && value.charCodeAt(end - 1) === 32) end--;
  if (start === end) throw badBearerRequest('the Authorization header has the Bearer scheme but no token');
  const token = value.slice(start, end);
  if (token.includes(' ')) throw badBearerRequest('the bearer token must be a single b64token (no spaces)');
  return token;
}
