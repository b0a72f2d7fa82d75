/**
 * Claims and claim containment: the one rule every registry authorization decision rests on.
 *
 * A resource (registry, source, entry) carries a flat map of claim key to string value. A
 * caller's claims are the claims of its JWT, where a value may be a string or an array of
 * strings. The caller satisfies a resource when it holds every key-value pair of the resource:
 * its value for the key equals the required value, or is an array with an element equal to it.
 * A resource without claims is satisfied by every caller. Other JWT value types (numbers,
 * booleans, objects) never match: resource values are strings, and no conversion is guessed.
 *
 * Pure functions only: no I/O, no clock.
 */

/** Claims of a registry, source or entry: claim key → required value. */
export type ClaimMap = Readonly<Record<string, string>>;

/** A caller's claims, as they come from the verified JWT. */
export type CallerClaims = Readonly<Record<string, unknown>>;

export const NO_CLAIMS: ClaimMap = Object.freeze({});

/** True when the JWT value `held` carries `required`: equal, or an array holding it. */
export function claimValueMatches(held: unknown, required: string): boolean {
  if (typeof held === 'string') return held === required;
  if (Array.isArray(held)) {
    for (const element of held) if (element === required) return true;
  }
  return false;
}

/**
 * Containment: the caller satisfies `required` when it holds every key-value pair of it.
 * `required` without claims is satisfied by everyone.
 */
export function claimsSatisfy(caller: CallerClaims, required: ClaimMap): boolean {
  for (const key in required) {
    if (!Object.hasOwn(required, key)) continue;
    if (!Object.hasOwn(caller, key) || !claimValueMatches(caller[key], required[key]!)) return false;
  }
  return true;
}

export function hasClaims(claims: ClaimMap): boolean {
  for (const key in claims) if (Object.hasOwn(claims, key)) return true;
  return false;
}

/** Exactly the same key-value pairs (order does not matter). */
export function sameClaims(a: ClaimMap, b: ClaimMap): boolean {
  const aKeys = Object.keys(a);
  if (aKeys.length !== Object.keys(b).length) return false;
  for (const key of aKeys) if (!Object.hasOwn(b, key) || a[key] !== b[key]) return false;
  return true;
}

/** The keys of `requested` that `caller` does not hold with the requested value (for messages). */
export function unheldClaims(caller: CallerClaims, requested: ClaimMap): string[] {
  return Object.keys(requested).filter((key) => !Object.hasOwn(caller, key) || !claimValueMatches(caller[key], requested[key]!));
}

// ---- The SQL encoding of containment ------------------------------------------------------
//
// Stores evaluate containment in the database so that a filtered page costs O(page): a
// resource's claims are stored as the set of its pairs, a caller's claims become the set of
// pairs it holds, and "caller satisfies resource" is "resource pairs ⊆ caller pairs" (the
// PostgreSQL array operator `<@`). A pair is the JSON text of `[key, value]`: unambiguous
// whatever the characters of the key and the value.

function claimPair(key: string, value: string): string {
  return JSON.stringify([key, value]);
}

/** The pairs of a resource's claims (sorted, so that equal maps encode equally). */
export function resourceClaimPairs(claims: ClaimMap): string[] {
  return Object.keys(claims)
    .sort()
    .map((key) => claimPair(key, claims[key]!));
}

/** Every pair a caller holds: one per string claim, one per string element of an array claim. */
export function callerClaimPairs(caller: CallerClaims): string[] {
  const pairs: string[] = [];
  for (const [key, held] of Object.entries(caller)) {
    if (typeof held === 'string') pairs.push(claimPair(key, held));
    else if (Array.isArray(held)) {
      for (const element of held) if (typeof element === 'string') pairs.push(claimPair(key, element));
    }
  }
  return pairs;
}
