/**
 * The errors of outgoing auth, in one catalogue. A failure to obtain a backend's credential is
 * that backend's failure: in transparent mode it is the answer (502, or 504 for a slow token
 * exchange service); in an aggregated group the call to that backend gets a JSON-RPC error
 * naming it, and the other backends keep working. A refusal of the caller's own token is the
 * core's `invalid_token` (401 with the challenge), so that the client logs in again.
 */
import { errorCatalogue, GatewayError } from '@gatehouse-mcp/gateway';

const outgoingAuthError = errorCatalogue({
  token_exchange_failed: 502,
  token_exchange_timeout: 504,
  upstream_token_unusable: 502,
});

/** Why an exchange failed, as counted in `gatehouse_token_exchange_failures_total{cause}`. */
export type ExchangeFailure = 'refused_subject' | 'refused' | 'unavailable' | 'timeout' | 'invalid_response';

/** A failure of the exchange for `backend`; `description` is public, `detail` is for the log. */
export function exchangeFailed(cause: Exclude<ExchangeFailure, 'refused_subject'>, backend: string, description: string, detail?: string): GatewayError {
  return outgoingAuthError(cause === 'timeout' ? 'token_exchange_timeout' : 'token_exchange_failed', `backend "${backend}": ${description}`, {
    ...(detail === undefined ? {} : { detail }),
    // Inside an MCP exchange the body is a JSON-RPC error (internal error), as for a backend that is down.
    rpcCode: -32603,
    extra: { backend, cause },
  });
}

/** The cause of an exchange failure, for the failure metric. */
export function causeOf(err: GatewayError): ExchangeFailure {
  if (err.code === 'invalid_token') return 'refused_subject';
  const cause = err.extra?.['cause'];
  return cause === 'refused' || cause === 'unavailable' || cause === 'timeout' || cause === 'invalid_response' ? cause : 'unavailable';
}

/** 401 invalid_token: the caller's login cannot give this backend a credential any more. */
export function reauthenticate(backend: string, description: string, detail: string): GatewayError {
  return new GatewayError('invalid_token', description, { detail, extra: { backend } });
}

/** A token another party issued is not one header value: it is not sent (header injection). */
export function unusableToken(backend: string, whose: string): GatewayError {
  return outgoingAuthError('upstream_token_unusable', `backend "${backend}": ${whose} cannot be sent in a header`, { rpcCode: -32603, extra: { backend } });
}
