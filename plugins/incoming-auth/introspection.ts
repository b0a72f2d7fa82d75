/**
 * RFC 7662 token introspection for opaque (non-JWT) access tokens, when the gateway has client
 * credentials (`clientSecretRef`). The request is made by openid-client (client_secret_basic,
 * response checks) through IssuerHttp (issuer URL rules, address guard, CA, timeout).
 *
 * An active answer must still be for us: `iss` (when present) is the issuer, `aud` includes the
 * audience (required: the audience is mandatory configuration, and a token for another resource
 * of the same issuer must not pass), `exp` / `nbf` hold with the leeway, and a subject exists
 * (`sub`, else `username`, else `client_id`).
 */
import * as client from 'openid-client';
import type { VerifiedToken } from './contract.ts';
import { invalidToken, issuerUnavailable } from './errors.ts';
import { reasonOf } from './fetch-reason.ts';
import type { IssuerHttp } from './issuer-http.ts';

export interface IntrospectionExpectations {
  readonly issuer: string;
  readonly audience: string;
  readonly clockToleranceSeconds: number;
  /** `exp` given to answers without one (seconds from now). */
  readonly defaultLifetimeSeconds: number;
}

export class Introspector {
  readonly #config: client.Configuration;

  constructor(http: IssuerHttp, issuer: string, endpoint: string, clientId: string, clientSecret: string, timeoutMs: number) {
    http.checkUrl(new URL(endpoint));
    this.#config = new client.Configuration({ issuer, introspection_endpoint: endpoint }, clientId, clientSecret, client.ClientSecretBasic(clientSecret));
    this.#config[client.customFetch] = http.fetch;
    this.#config.timeout = Math.max(1, Math.ceil(timeoutMs / 1000));
    if (new URL(endpoint).protocol === 'http:') client.allowInsecureRequests(this.#config);
  }

  /** Introspects `token`; 401 when it is not active or not for us, 503 when the endpoint fails. */
  async verify(token: string, expect: IntrospectionExpectations, nowMs: number): Promise<VerifiedToken> {
    let answer: client.IntrospectionResponse;
    try {
      answer = await client.tokenIntrospection(this.#config, token, { token_type_hint: 'access_token' });
    } catch (err) {
      throw issuerUnavailable(`token introspection failed: ${reasonOf(err)}`);
    }
    return checkIntrospection(answer, expect, nowMs);
  }
}

function includes(aud: unknown, audience: string): boolean {
  return aud === audience || (Array.isArray(aud) && aud.includes(audience));
}

/** The verified token an introspection answer stands for, or the 401 it means. */
function checkIntrospection(answer: client.IntrospectionResponse, expect: IntrospectionExpectations, nowMs: number): VerifiedToken {
  if (answer.active !== true) throw invalidToken('the token is not active (revoked, expired or unknown to the issuer)');
  const now = nowMs / 1000;
  const leeway = expect.clockToleranceSeconds;
  if (answer.iss !== undefined && answer.iss !== expect.issuer) {
    throw invalidToken('the token was not issued by the expected issuer', `introspection iss ${answer.iss}`);
  }
  if (!includes(answer.aud, expect.audience)) {
    throw invalidToken(`the token is not meant for this resource (its audience does not include "${expect.audience}")`);
  }
  if (typeof answer.exp === 'number' && answer.exp <= now - leeway) throw invalidToken('the token has expired');
  if (typeof answer.nbf === 'number' && answer.nbf > now + leeway) throw invalidToken('the token is not valid yet (nbf)');
  const subject = [answer.sub, answer.username, answer.client_id].find((s): s is string => typeof s === 'string' && s !== '');
  if (subject === undefined) throw invalidToken('the token has no subject (sub, username or client_id)');
  const expiresAt = typeof answer.exp === 'number' ? answer.exp : Math.floor(now) + expect.defaultLifetimeSeconds;
  return { subject, issuer: expect.issuer, claims: { ...answer }, expiresAt };
}
