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
import type { GatewayError } from '../../core/errors.ts';
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

function headerAlg(token: string): string {
  try {
    const alg = decodeProtectedHeader(token).alg;
    return typeof alg === 'string' ? alg : 'missing';
  } catch {
    return 'unreadable';
  }
}

/** The 401 for a token whose `alg` is not one of the keys' algorithms. */
function algorithmRefused(alg: string, detail: string): GatewayError {
  if (alg === 'none') return invalidToken('unsigned tokens (alg "none") are not accepted', detail);
  if (/^HS\d+$/.test(alg)) return invalidToken(`symmetric algorithms (alg "${alg}") are not accepted`, detail);
  return invalidToken(`the token's algorithm ("${alg}") is not one the issuer's keys use`, detail);
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
export function joseFailure(err: unknown, token: string, expect: JwtExpectations): GatewayError {
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
 * Verifies `token` against `keys`. Rejects with UnknownKeyError when no key matches its kid,
 * with a 401 GatewayError for every other token problem.
 */
export async function verifyJwt(token: string, keys: KeySet, expect: JwtExpectations, nowMs: number): Promise<VerifiedToken> {
  const options = {
    issuer: expect.issuer,
    audience: expect.audience,
    clockTolerance: expect.clockToleranceSeconds,
    currentDate: new Date(nowMs),
    requiredClaims: ['exp'],
  };
  // jose decodes the header once and asks for the key: the algorithm and key are settled here,
  // before any signature work. `none`, HS* and any algorithm the keys do not declare are refused
  // (and jose would refuse a key imported for another algorithm); a kid we do not hold goes to
  // a refetch.
  let candidates: readonly CryptoKey[] = [];
  const keyFor = (header: JWTHeaderParameters): CryptoKey => {
    if (!keys.algorithmSet.has(header.alg)) throw algorithmRefused(header.alg, `alg ${header.alg}; the keys allow ${keys.algorithms.join(', ')}`);
    const kid = typeof header.kid === 'string' ? header.kid : undefined;
    if (kid !== undefined && !keys.kids.has(kid)) throw new UnknownKeyError(`kid ${kid} is not in the key set`);
    candidates = keys.candidates(kid, header.alg);
    if (candidates.length === 0) throw new UnknownKeyError(`no key for kid ${kid ?? '(none)'} and alg ${header.alg}`);
    return candidates[0]!;
  };
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, keyFor, options));
  } catch (err) {
    // Without a kid, several keys may fit: a signature that fails with one is tried with the next.
    if (!(err instanceof errors.JWSSignatureVerificationFailed && candidates.length > 1)) throw joseFailure(err, token, expect);
    payload = await verifyWithOthers(token, candidates, options, expect);
  }
  // jose checks `iat` only against a maximum age: refuse one from the future, beyond the leeway.
  if (typeof payload.iat === 'number' && payload.iat > nowMs / 1000 + expect.clockToleranceSeconds) {
    throw invalidToken('the token was issued in the future (iat)');
  }
  return { subject: subjectOf(payload), issuer: expect.issuer, claims: payload, expiresAt: payload.exp!, validUntil: payload.exp! * 1000 };
}

/** A kid-less token whose signature failed with the first candidate key: the others in turn. */
async function verifyWithOthers(token: string, candidates: readonly CryptoKey[], options: JWTVerifyOptions, expect: JwtExpectations): Promise<JWTPayload> {
  for (let i = 1; ; i++) {
    try {
      return (await jwtVerify(token, candidates[i]!, options)).payload;
    } catch (err) {
      if (err instanceof errors.JWSSignatureVerificationFailed && i + 1 < candidates.length) continue;
      throw joseFailure(err, token, expect);
    }
  }
}
