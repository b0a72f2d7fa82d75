/**
 * The claims rules of publishing an entry version, in the order they are checked:
 *
 * 0. Publishing into a registry's managed source (and deleting from it) needs the source's own
 *    claims (403 `claims_not_held`): the claims of a source control who manages it, through a
 *    registry as through the admin API. A registry open to the caller does not open its managed
 *    source. Checked before the body is read.
 * 1. Under full authorization an entry needs claims (400 `claims_required`): an entry without
 *    claims would be invisible to everyone but superAdmin.
 * 2. Publish claims must be a subset of the publisher's JWT claims: every requested key must be
 *    held with the requested value (403 `claims_not_held`).
 * 3. Every later version carries exactly the claims of the entry's first version
 *    (409 `claims_mismatch`); the claims are named only to a caller who may see the entry.
 *
 * Rules 0 to 2 are claim checks: anonymous and auth-only modes skip them, and superAdmin
 * bypasses them. Rule 3 is an invariant of the data ("all versions of one entry carry identical
 * claims") and holds for every caller in every mode.
 */
import type { GatewayError } from '@gatehouse-mcp/gateway';
import { claimsError } from './errors.ts';
import { hasClaims, sameClaims, unheldClaims, type ClaimMap } from './claims.ts';
import { canAccess, canSeeEntry, type Caller } from './caller.ts';

const q = (text: string): string => JSON.stringify(text);

function describe(claims: ClaimMap): string {
  return hasClaims(claims) ? JSON.stringify(claims) : 'no claims';
}

/**
 * Rule 0: the error that refuses publishing into (or deleting from) the managed source of
 * `registry`, whose claims are `sourceClaims`, or null. The description names neither the source
 * nor its claims: the caller may not see them.
 */
export function managedSourceClaimsProblem(caller: Caller, sourceClaims: ClaimMap, registry: string): GatewayError | null {
  if (canAccess(caller, sourceClaims)) return null;
  return claimsError(
    'claims_not_held',
    `your token does not satisfy the claims of the managed source of registry ${q(registry)}: publishing to it and deleting from it need them`,
  );
}

/**
 * The error that refuses publishing a version with `requested` claims, or null when it may be
 * published. `existing` is the claims of the entry's versions already published (null for a
 * new entry).
 */
export function publishClaimsProblem(caller: Caller, requested: ClaimMap, existing: ClaimMap | null): GatewayError | null {
  if (!caller.unrestricted) {
    if (!hasClaims(requested)) {
      return claimsError('claims_required', 'claims are required when authorization is enabled: publish with a "claims" map (a subset of your token\'s claims), or the entry would be visible to superAdmin only');
    }
    const unheld = unheldClaims(caller.claims, requested);
    if (unheld.length > 0) {
      return claimsError('claims_not_held', `publish claims must be a subset of your token's claims: your token does not hold ${unheld.map((key) => `${q(key)}=${q(requested[key]!)}`).join(', ')}`);
    }
  }
  if (existing !== null && !sameClaims(existing, requested)) {
    const theirs = canSeeEntry(caller, existing) ? `published versions have ${describe(existing)}` : 'published versions have claims your token does not satisfy';
    return claimsError('claims_mismatch', `every version of an entry must carry the claims of its first version: ${theirs}, this one has ${describe(requested)}`);
  }
  return null;
}

/**
 * Creating (or re-scoping) a source or registry: its claims must be a subset of the caller's JWT
 * claims, so that nobody can scope a resource to claims they do not hold. SuperAdmin bypasses it.
 */
export function creationClaimsProblem(caller: Caller, requested: ClaimMap, what: string): GatewayError | null {
  if (caller.unrestricted) return null;
  const unheld = unheldClaims(caller.claims, requested);
  if (unheld.length === 0) return null;
  return claimsError('claims_not_held', `the claims of a ${what} must be a subset of your token's claims: your token does not hold ${unheld.map((key) => `${q(key)}=${q(requested[key]!)}`).join(', ')}`);
}
