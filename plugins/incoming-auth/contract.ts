/**
 * The contract of the bearer-token validator that both the vMCP incoming-auth plugin and the
 * registry server use. Implemented in `plugins/incoming-auth/validator.ts`.
 */
import type { JWTPayload } from 'jose';

/** What a verified token says. */
export interface VerifiedToken {
  readonly subject: string;
  readonly issuer: string;
  /** All claims of the token (JWT payload, or the introspection response of an opaque token). */
  readonly claims: Readonly<JWTPayload>;
  /** Expiry, seconds since the epoch. */
  readonly expiresAt: number;
}

export interface TokenValidatorOptions {
  /** The issuer URL: `iss` must equal it; discovery is fetched from it. */
  readonly issuer: string;
  /** `aud` must contain it. */
  readonly audience: string;
  /** Client credentials for RFC 7662 introspection of opaque tokens (both set to enable it). */
  readonly clientId?: string;
  readonly clientSecret?: string;
  /** Allow discovery / JWKS / introspection URLs that resolve to private addresses. */
  readonly allowPrivateIp?: boolean;
  /** Clock leeway for exp / nbf / iat, seconds (default 30). */
  readonly clockToleranceSeconds?: number;
  /** Extra CA certificates (PEM) trusted for the issuer's endpoints (cluster mode). */
  readonly ca?: string;
  /** Bearer token sent when fetching discovery and JWKS (cluster mode: the service-account token). */
  readonly fetchBearerToken?: string;
}

export interface TokenValidator {
  /**
   * Verifies a bearer token. Synchronous on a cache hit (microseconds), a promise otherwise.
   * Throws (or rejects with) a `GatewayError` with code `invalid_token` and a description that
   * says what is wrong (expired, wrong audience, unknown key, ...).
   */
  verify(token: string): VerifiedToken | Promise<VerifiedToken>;
  /** Fetches discovery and keys ahead of the first request; failures are logged, not fatal. */
  warm(): Promise<void>;
  close(): void;
}
