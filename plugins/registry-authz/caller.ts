/**
 * The caller of one registry request, as authorization sees it: the operating mode, the claims
 * of its token, and the roles they resolve to. Built once per request (in the authorize phase)
 * and consulted by every check of that request.
 *
 * The operating modes (plugins/registry/README.md, Configuration):
 * - anonymous: no token; every check is bypassed, everything is visible.
 * - authOnly: a valid token is required; no claims filtering, roles neither resolved nor enforced.
 * - full: the three layers apply (registry gate, entry filter, role checks); superAdmin bypasses
 *   every claim check.
 */
import { claimsSatisfy, hasClaims, type CallerClaims, type ClaimMap } from './claims.ts';
import { resolveRoles, type RoleName, type RoleRules } from './roles.ts';

export type AuthzMode = 'anonymous' | 'authOnly' | 'full';

export interface Caller {
  readonly mode: AuthzMode;
  /** The token's subject; null in anonymous mode. */
  readonly subject: string | null;
  readonly claims: CallerClaims;
  /** Resolved roles (full mode only; empty otherwise, since roles are not resolved then). */
  readonly roles: readonly RoleName[];
  /** True when no claim check applies to this caller: anonymous, auth-only, or superAdmin. */
  readonly unrestricted: boolean;
}

const EMPTY: CallerClaims = Object.freeze({});

export const ANONYMOUS_CALLER: Caller = Object.freeze({ mode: 'anonymous', subject: null, claims: EMPTY, roles: [], unrestricted: true });

export function authenticatedCaller(mode: 'authOnly' | 'full', subject: string, claims: CallerClaims, rules: RoleRules): Caller {
  if (mode === 'authOnly') return { mode, subject, claims, roles: [], unrestricted: true };
  const roles = resolveRoles(claims, rules);
  return { mode, subject, claims, roles, unrestricted: roles.includes('superAdmin') };
}

/** Layer 3: may the caller perform an operation that needs `role`? (superAdmin holds every role.) */
export function holdsRole(caller: Caller, role: RoleName): boolean {
  return caller.mode !== 'full' || caller.roles.includes('superAdmin') || caller.roles.includes(role);
}

/**
 * Layer 1 and admin scoping: may the caller access a registry or source with these claims?
 * A registry or source without claims is open to every authenticated caller.
 */
export function canAccess(caller: Caller, claims: ClaimMap): boolean {
  return caller.unrestricted || claimsSatisfy(caller.claims, claims);
}

/**
 * Layer 2: is an entry with these claims visible to the caller? Under full authorization the
 * filter needs claims on both sides, so an entry without claims is visible only to superAdmin.
 */
export function canSeeEntry(caller: Caller, claims: ClaimMap): boolean {
  return caller.unrestricted || (hasClaims(claims) && claimsSatisfy(caller.claims, claims));
}
