/**
 * Roles and their resolution from a caller's claims.
 *
 * Each role is configured as a list of claim maps. A caller holds the role when its claims
 * satisfy ANY map of the list (OR); satisfying a map means holding ALL its pairs (AND, with the
 * array rule of `claimsSatisfy`). A role that is not configured is held by nobody.
 */
import { claimsSatisfy, type CallerClaims, type ClaimMap } from './claims.ts';

export const ROLE_NAMES = ['superAdmin', 'manageSources', 'manageRegistries', 'manageEntries'] as const;
export type RoleName = (typeof ROLE_NAMES)[number];

/** What each role grants, for messages and documentation. */
export const ROLE_GRANTS: Readonly<Record<RoleName, string>> = {
  superAdmin: 'all operations, bypassing every claim check',
  manageSources: 'create, update, delete and list sources',
  manageRegistries: 'create, update, delete and list registries',
  manageEntries: 'publish and delete MCP server versions and skills',
};

/** `authz.roles`: role → the claim maps that grant it. */
export type RoleRules = Readonly<Partial<Record<RoleName, readonly ClaimMap[]>>>;

/** True when the caller's claims satisfy one of `maps` (OR over maps, AND within a map). */
function matchesAnyClaimMap(caller: CallerClaims, maps: readonly ClaimMap[]): boolean {
  for (const map of maps) if (claimsSatisfy(caller, map)) return true;
  return false;
}

/** The roles the caller holds, in the order of ROLE_NAMES. */
export function resolveRoles(caller: CallerClaims, rules: RoleRules): RoleName[] {
  const roles: RoleName[] = [];
  for (const role of ROLE_NAMES) {
    const maps = rules[role];
    if (maps !== undefined && matchesAnyClaimMap(caller, maps)) roles.push(role);
  }
  return roles;
}
