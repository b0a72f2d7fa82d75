/**
 * Verification of one JWT access token with jose: signature against the issuer's key set
 * (only the asymmetric algorithms the keys declare, checked on the header jose decodes, then
 * the key chosen by kid, pre-imported, all before any signature work), `iss`, `aud`,
 * `exp` (required), `nbf`, and an `iat` that is not in the future, each with the clock leeway;
 * a `sub` is required. jose's errors become 401 `invalid_token` with a description that says
 * what is wrong; key lookup misses surface as `UnknownKeyError` so the validator can refetch
 * the keys once.
 */
import { decodeProtectedHeader, errors, jwtVerify, type CryptoKey, type JWTHeaderParameters, type JWTPayload, type JWTVerifyOptions } from 'jose';
import { type GatewayError, untrusted } from '@gatehouse-mcp/gateway';
import type { VerifiedToken } from './contract.ts';
import { invalidToken } from './errors.ts';
import type { KeySet } from './key-set.ts';

export interface JwtExpectations {
  readonly issuer: string;
  readonly audience: string;
  readonly clockToleranceSeconds: number;
}

/** No key of the set matches the token's `kid` / `alg`: the validator may refetch the keys once. */
export class UnknownKeyError extends Error {
  override name = 'UnknownKeyError';
}

/** Number of `.`-separated parts: 3 for a JWS compact JWT, 5 for a JWE. */
export function jwtParts(token: string): number {
  let parts = 1;
  for (let i = token.indexOf('.'); i !== -1; i = token.indexOf('.', i + 1)) parts++;
  return parts;
}

function headerAlg(token: string): unknown {
  try {
    return decodeProtectedHeader(token).alg;
  } catch {
    return undefined;
  }
}

/**
 * The 401 for a token whose `alg` is not one of the keys' algorithms. The `alg` is the client's
 * text: it is quoted back only through `untrusted` (printable ASCII, bounded), since the
 * description also travels in the WWW-Authenticate header.
 */
function algorithmRefused(alg: unknown, detail: string): GatewayError {
  const shown = typeof alg === 'string' ? untrusted(alg, 32) : 'missing';
  if (alg === 'none') return invalidToken('unsigned tokens (alg "none") are not accepted', detail);
  if (typeof alg === 'string' && /^HS\d+$/.test(alg)) return invalidToken(`symmetric algorithms (alg ${shown}) are not accepted`, detail);
  return invalidToken(`the token's algorithm (${shown}) is not one the issuer's keys use`, detail);
}

function claimFailure(err: errors.JWTClaimValidationFailed, expect: JwtExpectations): GatewayError {
  switch (err.claim) {
    case 'aud':
      return invalidToken(`the token is not meant for this resource (its audience does not include "${expect.audience}")`, err.message);
    case 'iss':
      return invalidToken('the token was not issued by the expected issuer', err.message);
    case 'nbf':
      return invalidToken('the token is not valid yet (nbf)', err.message);
    case 'exp':
      return invalidToken('the token has no valid expiry (exp)', err.message);
    case 'iat':
      return invalidToken('the token has an invalid issued-at time (iat)', err.message);
    default:
      return invalidToken(`the token's "${err.claim}" claim is invalid`, err.message);
  }
}

/** Maps a jose failure to the 401 the client gets; anything not from jose is rethrown. */
function joseFailure(err: unknown, token: string, expect: JwtExpectations): GatewayError {
  if (err instanceof errors.JWTExpired) return invalidToken('the token has expired', err.message);
  if (err instanceof errors.JWTClaimValidationFailed) return claimFailure(err, expect);
  if (err instanceof errors.JOSEAlgNotAllowed || err instanceof errors.JOSENotSupported) return algorithmRefused(headerAlg(token), err.message);
  if (err instanceof errors.JWSSignatureVerificationFailed) return invalidToken('the token signature is invalid', err.message);
  if (err instanceof errors.JOSEError) return invalidToken('the token is malformed', `${err.code}: ${err.message}`);
  throw err;
}

/** The subject of a verified payload: `sub` (required). */
function subjectOf(payload: JWTPayload): string {
  if (typeof payload.sub !== 'string' || payload.sub === '') throw invalidToken('the token has no subject (sub)');
  return payload.sub;
}

/**
 * One JWT verification against a key set, in the synchronous pieces the validator runs around
 * its one `await` of jose (a further async layer of ours cost more CPU than all these checks):
 *
 *   const check = new JwtCheck(keys, expect, nowMs);
 *   try { payload = (await jwtVerify(token, check.keyFor, check.options)).payload; }
 *   catch (err) { payload = await check.afterRejection(err, token); }
 *   return check.accept(payload);
 *
 * jose decodes the header once and asks `keyFor` for the key: the algorithm and key are settled
 * there, before any signature work. `none`, HS* and any algorithm the keys do not declare are
 * refused (and jose would refuse a key imported for another algorithm); a kid the set does not
 * hold throws UnknownKeyError, so that the validator can refetch the keys once.
 */
export class JwtCheck {
  readonly options: JWTVerifyOptions;
  readonly keyFor: (header: JWTHeaderParameters) => CryptoKey;
  readonly #expect: JwtExpectations;
  readonly #nowMs: number;
  /** The keys that may have signed the token (several only for a token without kid). */
  #candidates: readonly CryptoKey[] = [];

  constructor(keys: KeySet, expect: JwtExpectations, nowMs: number) {
    this.#expect = expect;
    this.#nowMs = nowMs;
    this.options = {
      issuer: expect.issuer,
      audience: expect.audience,
      clockTolerance: expect.clockToleranceSeconds,
      currentDate: new Date(nowMs),
      requiredClaims: ['exp'],
    };
    this.keyFor = (header) => {
      if (!keys.algorithmSet.has(header.alg)) throw algorithmRefused(header.alg, `alg ${untrusted(String(header.alg), 32)}; the keys allow ${keys.algorithms.join(', ')}`);
      const kid = typeof header.kid === 'string' ? header.kid : undefined;
      if (kid !== undefined && !keys.kids.has(kid)) throw new UnknownKeyError(`kid ${kid} is not in the key set`);
      this.#candidates = keys.candidates(kid, header.alg);
      if (this.#candidates.length === 0) throw new UnknownKeyError(`no key for kid ${kid ?? '(none)'} and alg ${header.alg}`);
      return this.#candidates[0]!;
    };
  }

  /**
   * After jose rejected the token with `err`: for a token without kid whose signature failed
   * with one key, the payload as verified by another of its candidates; otherwise rejects with
   * the 401, or with the UnknownKeyError `keyFor` threw.
   */
  async afterRejection(err: unknown, token: string): Promise<JWTPayload> {
    for (let i = 1; err instanceof errors.JWSSignatureVerificationFailed && i < this.#candidates.length; i++) {
      try {
        return (await jwtVerify(token, this.#candidates[i]!, this.options)).payload;
      } catch (next) {
        err = next;
      }
    }
    throw joseFailure(err, token, this.#expect);
  }

  /** The verified token of a payload jose accepted, after the checks jose does not make. */
  accept(payload: JWTPayload): VerifiedToken {
    // jose checks `iat` only against a maximum age: refuse one from the future, beyond the leeway.
    if (typeof payload.iat === 'number' && payload.iat > this.#nowMs / 1000 + this.#expect.clockToleranceSeconds) {
      throw invalidToken('the token was issued in the future (iat)');
    }
    return { subject: subjectOf(payload), issuer: this.#expect.issuer, claims: payload, expiresAt: payload.exp!, validUntil: payload.exp! * 1000 };
  }
}
