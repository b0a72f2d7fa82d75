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
  /**
   * Until when (ms since the epoch) this result may be reused without asking the validator
   * again: the token's `exp`, or earlier for introspection results (their cache cap). Set by the
   * validator of validator.ts (extension: absent means `expiresAt`).
   */
  readonly validUntil?: number;
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
  /**
   * Bearer token sent when fetching discovery and JWKS (cluster mode: the service-account token),
   * only to the issuer's own origin. A function is called per fetch (projected tokens rotate).
   */
  readonly fetchBearerToken?: string | (() => string);

  // ---- Extensions (all optional; defaults in brackets) ----------------------------------------

  /**
   * The issuer's public keys, known in this process (the embedded authorization server): no
   * discovery and no JWKS fetch, so nothing leaves the process and no private-address exception
   * is needed. Tokens are checked exactly as with fetched keys.
   */
  readonly localKeys?: { readonly keys: readonly Record<string, unknown>[] };
  /** JWKS URL to use instead of the discovery document's `jwks_uri` (cluster mode: `<issuer>/openid/v1/jwks`). */
  readonly jwksUri?: string;
  /**
   * Take the expected `iss` from the discovery document fetched at `issuer` instead of requiring
   * them to be equal (cluster mode: the API server's service-account issuer is auto-detected). [false]
   */
  readonly issuerFromDiscovery?: boolean;
  /** Timeout of each discovery / JWKS / introspection request, ms. [5000] */
  readonly fetchTimeoutMs?: number;
  readonly cache?: TokenValidatorCacheOptions;
  /** The clock, ms since the epoch (tests inject one). [Date.now] */
  readonly now?: () => number;
}

export interface TokenValidatorCacheOptions {
  /** Verified tokens kept (LRU), each until its `exp`. [10000] */
  readonly maxTokens?: number;
  /** JWKS freshness: the issuer's `Cache-Control: max-age`, clamped to [min, max]; default when absent. [60, 86400, 600] */
  readonly jwksMinAgeSeconds?: number;
  readonly jwksMaxAgeSeconds?: number;
  readonly jwksDefaultAgeSeconds?: number;
  /** At most one JWKS fetch per cooldown for an unknown `kid` or an unreachable issuer. [30] */
  readonly jwksCooldownSeconds?: number;
  /**
   * Cap on how long an active introspection result is cached (never past its `exp`): a token
   * revoked at the issuer is refused within this. [60]
   */
  readonly introspectionMaxAgeSeconds?: number;
  /**
   * How long a token the issuer said is not active (or not for this resource) is refused
   * without asking again: a flood of one bad opaque token costs the issuer one call. [10]
   */
  readonly introspectionRefusedSeconds?: number;
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
