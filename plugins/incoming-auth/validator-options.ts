/**
 * The validator's options, checked and completed with their defaults. A problem is an Error whose
 * message names the option and says what is expected, so a misconfiguration fails at start.
 */
import { isLoopbackHost, StartupError } from '@gatehouse-mcp/gateway';
import type { TokenValidatorOptions } from './contract.ts';

export interface ValidatorSettings {
  readonly issuer: string;
  /** The issuer's keys in this process (no discovery, no JWKS fetch), or null. */
  readonly localKeys: { readonly keys: readonly Record<string, unknown>[] } | null;
  readonly issuerUrl: URL;
  readonly audience: string;
  readonly clientId: string | undefined;
  readonly clientSecret: string | undefined;
  readonly allowPrivateIp: boolean;
  readonly clockToleranceSeconds: number;
  readonly ca: string | undefined;
  readonly fetchBearerToken: string | (() => string) | undefined;
  readonly jwksUri: string | null;
  readonly issuerFromDiscovery: boolean;
  readonly fetchTimeoutMs: number;
  readonly maxTokens: number;
  readonly jwksMinAgeMs: number;
  readonly jwksMaxAgeMs: number;
  readonly jwksDefaultAgeMs: number;
  readonly cooldownMs: number;
  /** Cap on cached active introspection results, ms. */
  readonly introspectionMaxAgeMs: number;
  /** How long an introspection refusal is remembered, ms (0: not at all). */
  readonly introspectionRefusedMs: number;
  /** Lifetime given to introspection answers without `exp`, seconds. */
  readonly introspectionDefaultSeconds: number;
  readonly now: () => number;
  readonly injectedClock: boolean;
}

/** An option the validator cannot work with (the message names it and what is expected). */
export class ValidatorOptionsError extends StartupError {}

/** Issuer / endpoint URL rule (core/README.md, Decisions): absolute https, or http on a loopback host. */
function checkIssuerUrl(value: unknown, what: string): URL {
  let url: URL;
  try {
    url = new URL(String(value));
  } catch {
    throw new ValidatorOptionsError(`${what} must be an absolute https URL (got ${JSON.stringify(value)})`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ValidatorOptionsError(`${what} must be an absolute https URL (got ${JSON.stringify(value)})`);
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw new ValidatorOptionsError(`${what} must use https: plain http is allowed only for loopback hosts (localhost, 127.0.0.0/8, ::1) (got ${JSON.stringify(value)})`);
  }
  if (url.search !== '' || url.hash !== '') throw new ValidatorOptionsError(`${what} must not have a query or a fragment (got ${JSON.stringify(value)})`);
  return url;
}

function seconds(value: number | undefined, fallback: number, what: string): number {
  const v = value ?? fallback;
  if (!Number.isFinite(v) || v < 0) throw new ValidatorOptionsError(`${what} must be a number of seconds ≥ 0 (got ${String(value)})`);
  return v;
}

export function validatorSettings(options: TokenValidatorOptions): ValidatorSettings {
  const issuerUrl = checkIssuerUrl(options.issuer, 'issuer');
  if (typeof options.audience !== 'string' || options.audience.trim() === '') {
    throw new ValidatorOptionsError('audience is required: tokens must name this resource in "aud"');
  }
  const hasId = typeof options.clientId === 'string' && options.clientId !== '';
  const hasSecret = typeof options.clientSecret === 'string' && options.clientSecret !== '';
  if (hasSecret && !hasId) throw new ValidatorOptionsError('clientSecret is set without clientId: introspection needs both');
  if (options.jwksUri !== undefined) checkIssuerUrl(options.jwksUri, 'jwksUri');
  const cache = options.cache ?? {};
  const maxTokens = cache.maxTokens ?? 10_000;
  if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new ValidatorOptionsError(`cache.maxTokens must be an integer ≥ 1 (got ${maxTokens})`);
  const jwksMinAgeMs = seconds(cache.jwksMinAgeSeconds, 60, 'cache.jwksMinAgeSeconds') * 1000;
  const jwksMaxAgeMs = seconds(cache.jwksMaxAgeSeconds, 86_400, 'cache.jwksMaxAgeSeconds') * 1000;
  if (jwksMaxAgeMs < jwksMinAgeMs) throw new ValidatorOptionsError('cache.jwksMaxAgeSeconds must be ≥ cache.jwksMinAgeSeconds');
  const introspectionCap = seconds(cache.introspectionMaxAgeSeconds, 60, 'cache.introspectionMaxAgeSeconds');
  return {
    issuer: options.issuer,
    localKeys: options.localKeys ?? null,
    issuerUrl,
    audience: options.audience,
    clientId: hasId ? options.clientId : undefined,
    clientSecret: hasId && hasSecret ? options.clientSecret : undefined,
    allowPrivateIp: options.allowPrivateIp === true,
    clockToleranceSeconds: seconds(options.clockToleranceSeconds, 30, 'clockToleranceSeconds'),
    ca: options.ca,
    fetchBearerToken: options.fetchBearerToken,
    jwksUri: options.jwksUri ?? null,
    issuerFromDiscovery: options.issuerFromDiscovery === true,
    fetchTimeoutMs: seconds(options.fetchTimeoutMs, 5000, 'fetchTimeoutMs'),
    maxTokens,
    jwksMinAgeMs,
    jwksMaxAgeMs,
    jwksDefaultAgeMs: seconds(cache.jwksDefaultAgeSeconds, 600, 'cache.jwksDefaultAgeSeconds') * 1000,
    cooldownMs: seconds(cache.jwksCooldownSeconds, 30, 'cache.jwksCooldownSeconds') * 1000,
    introspectionMaxAgeMs: introspectionCap * 1000,
    introspectionRefusedMs: seconds(cache.introspectionRefusedSeconds, 10, 'cache.introspectionRefusedSeconds') * 1000,
    introspectionDefaultSeconds: Math.min(60, introspectionCap),
    now: options.now ?? Date.now,
    injectedClock: options.now !== undefined,
  };
}
