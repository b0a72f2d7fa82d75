/**
 * The errors incoming auth answers with (core/README.md, Decisions): a request without usable bearer
 * credentials is 401 `invalid_request`, a token that fails validation is 401 `invalid_token`,
 * and an issuer that cannot be reached to check a token is 503 `temporarily_unavailable` (the
 * token may be fine: a 401 would make the client re-authenticate for nothing).
 *
 * Descriptions are public and say what is wrong; `detail` is logged only. Neither ever
 * contains a token or key material.
 */
import { GatewayError } from '@gatehouse-mcp/gateway';

/** 401 `invalid_request`: no bearer token, or one sent in a way the MCP authorization spec forbids. */
export function badBearerRequest(description: string): GatewayError {
  return new GatewayError('invalid_request', description, { status: 401 });
}

/** 401 `invalid_token`. */
export function invalidToken(description: string, detail?: string): GatewayError {
  return new GatewayError('invalid_token', description, detail === undefined ? undefined : { detail });
}

/** 503 `temporarily_unavailable`: the issuer's keys or introspection endpoint cannot be reached. */
export function issuerUnavailable(detail: string): GatewayError {
  return new GatewayError('temporarily_unavailable', 'the token issuer cannot be reached to check the token; try again shortly', {
    status: 503,
    detail,
    headers: { 'retry-after': '5' },
  });
}

/** A thrown value as a GatewayError: anything unexpected becomes the generic 500, with its message kept private. */
export function asGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError('internal_error', 'internal error', { detail: err instanceof Error ? err.message : String(err), cause: err });
}
