/**
 * One RFC 8693 token exchange endpoint (an STS), as the gateway's OAuth client: the grant request
 * is openid-client's (`genericGrantRequest`, client_secret_basic, response checks), sent through
 * IssuerHttp (https, or plain http on loopback; no redirects; a size cap; the exchange's timeout).
 *
 * Each failure becomes the answer the client can act on, named after the backend and never
 * quoting a token:
 *   - the STS refuses the subject (`invalid_grant`, `invalid_token`): 401 invalid_token, so the
 *     client gets the challenge and logs in again;
 *   - the STS refuses the gateway's request (its client, scope, audience, grant type): 502, a
 *     configuration problem the operator reads in the log;
 *   - the STS is down, answers 5xx or something that is not a token response: 502;
 *   - the STS is slower than the exchange's timeout: 504.
 */
import * as client from 'openid-client';
import { decodeJwt } from 'jose';
import type { GatewayError, TokenExchangeConfig } from '@gatehouse-mcp/gateway';
import { IssuerHttp } from '../incoming-auth/issuer-http.ts';
import { isHeaderSafeToken } from './header-safe.ts';
import { exchangeFailed, reauthenticate, type ExchangeFailure } from './errors.ts';

const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const JWT_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:jwt';
/** OAuth error codes that mean "this subject token will not do": the client must log in again. */
const SUBJECT_REFUSED = new Set(['invalid_grant', 'invalid_token']);
/** What of an STS's error code may be shown: an OAuth error code is a short word. */
const ERROR_CODE = /^[a-z0-9_]{1,64}$/;

export interface ExchangedToken {
  readonly accessToken: string;
  /** How long it is good for, from now (ms), from `expires_in` or its JWT `exp`; null when neither says. */
  readonly lifetimeMs: number | null;
}

export class StsClient {
  readonly backend: string;
  readonly #exchange: TokenExchangeConfig;
  readonly #config: client.Configuration;
  readonly #http: IssuerHttp;

  constructor(exchange: TokenExchangeConfig, backend: string) {
    this.backend = backend;
    this.#exchange = exchange;
    const tokenUrl = new URL(exchange.tokenUrl);
    // The STS is the operator's own service (often on a private network): private addresses are allowed.
    this.#http = new IssuerHttp({ issuer: tokenUrl, allowPrivateIp: true, timeoutMs: exchange.timeoutMs, maxBytes: 64 * 1024 });
    this.#http.checkUrl(tokenUrl);
    const secret = exchange.clientSecret?.value;
    this.#config = new client.Configuration(
      { issuer: tokenUrl.origin, token_endpoint: tokenUrl.href },
      exchange.clientId,
      secret,
      secret === undefined ? client.None() : client.ClientSecretBasic(secret),
    );
    // One deadline for the whole exchange, response body included (openid-client's own timeout
    // is in whole seconds, and a body trickling in would outlast it).
    this.#config[client.customFetch] = (url, init) => this.#http.fetch(url, { ...init, signal: AbortSignal.timeout(exchange.timeoutMs) });
    this.#config.timeout = Math.ceil(exchange.timeoutMs / 1000) + 1;
    if (tokenUrl.protocol === 'http:') client.allowInsecureRequests(this.#config);
  }

  /** Exchanges `subject` for a token for this backend's audience; throws the GatewayError the client gets. */
  async exchange(subject: string): Promise<ExchangedToken> {
    const x = this.#exchange;
    const parameters: Record<string, string> = {
      subject_token: subject,
      subject_token_type: x.subjectTokenType,
      requested_token_type: ACCESS_TOKEN_TYPE,
      audience: x.audience,
    };
    if (x.scopes.length > 0) parameters['scope'] = x.scopes.join(' ');
    let answer: client.TokenEndpointResponse;
    try {
      answer = await client.genericGrantRequest(this.#config, TOKEN_EXCHANGE_GRANT, parameters);
    } catch (err) {
      throw this.#failure(err, subject);
    }
    const problem = answerProblem(answer);
    if (problem !== null) throw exchangeFailed('invalid_response', this.backend, `the token exchange service returned ${problem}`);
    return { accessToken: answer.access_token, lifetimeMs: lifetimeOf(answer) };
  }

  #failure(err: unknown, subject: string): GatewayError {
    const at = `${this.#exchange.tokenUrl} (MCPExternalAuthConfig/${this.#exchange.name})`;
    if (err instanceof client.ResponseBodyError) {
      const code = ERROR_CODE.test(err.error) ? err.error : 'an unknown error';
      // The STS's own words, for the operator; an STS quoting the subject token must not put it in the log.
      const said = String(err.error_description ?? '').split(subject).join('[the subject token]').slice(0, 200);
      const detail = `${at} answered ${err.status} ${code}: ${said}`;
      if (err.status >= 500 || err.error === 'server_error' || err.error === 'temporarily_unavailable') {
        return exchangeFailed('unavailable', this.backend, 'the token exchange service is unavailable', detail);
      }
      if (SUBJECT_REFUSED.has(err.error)) {
        return reauthenticate(this.backend, `the token exchange service for backend "${this.backend}" refused the caller's token (${code}); re-authentication required`, detail);
      }
      return exchangeFailed('refused', this.backend, `the token exchange service refused the gateway's request (${code}): check MCPExternalAuthConfig/${this.#exchange.name}`, detail);
    }
    if (err instanceof client.WWWAuthenticateChallengeError) {
      return exchangeFailed('refused', this.backend, `the token exchange service refused the gateway's client credentials: check MCPExternalAuthConfig/${this.#exchange.name}`, `${at} answered ${err.status}`);
    }
    if (isTimeout(err)) return exchangeFailed('timeout', this.backend, `the token exchange service did not answer within ${this.#exchange.timeoutMs} ms`, at);
    const status = statusOf(err);
    const kind: ExchangeFailure = err instanceof client.ClientError && !(status !== null && status >= 500) ? 'invalid_response' : 'unavailable';
    const description = kind === 'invalid_response' ? 'the token exchange service did not answer with a token' : 'the token exchange service is unavailable';
    return exchangeFailed(kind, this.backend, description, `${at}${status === null ? '' : ` answered ${status}`}: ${messageOf(err)}`);
  }

  close(): Promise<void> {
    return this.#http.close();
  }
}

/** The deepest Error's message (undici wraps network errors in "fetch failed"; openid-client puts a Response as cause). */
function messageOf(err: unknown): string {
  let message = err instanceof Error ? err.message : String(err);
  for (let current = err, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) message = current.message;
  return message;
}

/** The HTTP status of the answer a failure is about (openid-client keeps the Response as a cause), or null. */
function statusOf(err: unknown): number | null {
  for (let current = err, depth = 0; current instanceof Object && depth < 5; current = (current as { cause?: unknown }).cause, depth++) {
    // Duck-typed: the Response of undici's fetch is not the global Response class.
    const status = (current as { status?: unknown; headers?: unknown }).status;
    if (typeof status === 'number' && typeof (current as { headers?: unknown }).headers === 'object') return status;
  }
  return null;
}

function isTimeout(err: unknown): boolean {
  for (let current = err, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (current.name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return true;
  }
  return false;
}

/** What is wrong with a token exchange answer the gateway would send on, or null. */
function answerProblem(answer: client.TokenEndpointResponse): string | null {
  if (!isHeaderSafeToken(answer.access_token)) return 'an access token that cannot be sent in a header';
  // Sent as a bearer token: a DPoP-bound or N_A (not an access token) answer would not work there.
  if (typeof answer.token_type === 'string' && answer.token_type.toLowerCase() !== 'bearer') return `a token of type ${JSON.stringify(answer.token_type.slice(0, 32))}, not Bearer`;
  const issued = (answer as { issued_token_type?: unknown }).issued_token_type;
  if (issued !== undefined && issued !== ACCESS_TOKEN_TYPE && issued !== JWT_TOKEN_TYPE) return 'a token that is not an access token (issued_token_type)';
  return null;
}

/** The exchanged token's lifetime from now, in ms: `expires_in`, else its JWT `exp`, else null. */
export function lifetimeOf(answer: { access_token: string; expires_in?: number | undefined }, nowMs = Date.now()): number | null {
  if (typeof answer.expires_in === 'number' && Number.isFinite(answer.expires_in)) return answer.expires_in * 1000;
  try {
    const exp = decodeJwt(answer.access_token).exp;
    if (typeof exp === 'number' && Number.isFinite(exp)) return exp * 1000 - nowMs;
  } catch {
    // Not a JWT: nothing to read.
  }
  return null;
}
