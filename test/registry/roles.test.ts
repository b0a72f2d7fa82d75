/**
 * Roles (OR over a role's claim maps, AND within a map, array claims) and the caller checks of
 * each operating mode: role checks (layer 3), access to registries and sources (layer 1 and
 * admin scoping), entry visibility (layer 2), and the superAdmin bypass.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ANONYMOUS_CALLER, authenticatedCaller, canAccess, canSeeEntry, holdsRole } from '../../plugins/registry-authz/caller.ts';
import { claimsSatisfy, type ClaimMap } from '../../plugins/registry-authz/claims.ts';
import { ROLE_NAMES, resolveRoles, type RoleRules } from '../../plugins/registry-authz/roles.ts';

const rules: RoleRules = {
  superAdmin: [{ role: 'super-admin' }],
  manageSources: [{ role: 'admin' }, { team: 'platform', level: 'senior' }],
  manageRegistries: [{ role: 'admin' }],
  manageEntries: [{ role: 'writer' }, { groups: 'publishers' }],
};

describe('resolveRoles', () => {
  it('OR over the maps of a role: any one map grants it', () => {
    assert.deepEqual(resolveRoles({ role: 'admin' }, rules), ['manageSources', 'manageRegistries']);
    assert.deepEqual(resolveRoles({ team: 'platform', level: 'senior' }, rules), ['manageSources']);
  });
  it('AND within a map: every pair of the map is needed', () => {
    assert.deepEqual(resolveRoles({ team: 'platform' }, rules), []);
    assert.deepEqual(resolveRoles({ level: 'senior' }, rules), []);
    assert.deepEqual(resolveRoles({ team: 'platform', level: 'junior' }, rules), []);
  });
  it('an array claim matches a map when any element equals the required value', () => {
    assert.deepEqual(resolveRoles({ role: ['reader', 'writer'] }, rules), ['manageEntries']);
    assert.deepEqual(resolveRoles({ groups: ['everyone', 'publishers'] }, rules), ['manageEntries']);
    assert.deepEqual(resolveRoles({ role: ['admin', 'super-admin'] }, rules), ['superAdmin', 'manageSources', 'manageRegistries']);
  });
  it('a role that is not configured is held by nobody', () => {
    assert.deepEqual(resolveRoles({ role: 'admin' }, {}), []);
  });

  const key = fc.constantFrom('role', 'team', 'org');
  const val = fc.constantFrom('a', 'b', 'c');
  const map: fc.Arbitrary<ClaimMap> = fc.dictionary(key, val, { minKeys: 1, maxKeys: 3 });
  const callerClaims = fc.dictionary(key, fc.oneof(val, fc.array(val, { maxLength: 3 })), { maxKeys: 3 });
  it('law: a role is held iff some map of it is satisfied', () => {
    fc.assert(
      fc.property(fc.array(map, { maxLength: 3 }), callerClaims, (maps, claims) => {
        const held = resolveRoles(claims, { manageEntries: maps }).includes('manageEntries');
        return held === maps.some((m) => claimsSatisfy(claims, m));
      }),
    );
  });
  it('law: adding a map to a role never takes the role away', () => {
    fc.assert(
      fc.property(fc.array(map, { maxLength: 3 }), map, callerClaims, (maps, extra, claims) => {
        const before = resolveRoles(claims, { manageEntries: maps }).includes('manageEntries');
        return !before || resolveRoles(claims, { manageEntries: [...maps, extra] }).includes('manageEntries');
      }),
    );
  });
});

describe('the caller in each mode', () => {
  const restricted = authenticatedCaller('full', 'alice', { org: 'acme', team: ['platform'], role: 'writer' }, rules);
  const superAdmin = authenticatedCaller('full', 'root', { role: 'super-admin' }, rules);
  const authOnly = authenticatedCaller('authOnly', 'bob', { role: 'nothing' }, rules);

  it('full authorization: roles are resolved and enforced', () => {
    assert.deepEqual(restricted.roles, ['manageEntries']);
    assert.equal(holdsRole(restricted, 'manageEntries'), true);
    assert.equal(holdsRole(restricted, 'manageSources'), false);
  });
  it('full authorization: resources are gated by containment; claimless ones are open', () => {
    assert.equal(canAccess(restricted, { org: 'acme' }), true);
    assert.equal(canAccess(restricted, { org: 'acme', team: 'platform' }), true);
    assert.equal(canAccess(restricted, { org: 'acme', team: 'data' }), false);
    assert.equal(canAccess(restricted, {}), true);
  });
  it('full authorization: an entry needs claims on both sides (claimless entries are hidden)', () => {
    assert.equal(canSeeEntry(restricted, { org: 'acme' }), true);
    assert.equal(canSeeEntry(restricted, { team: 'data' }), false);
    assert.equal(canSeeEntry(restricted, {}), false);
  });
  it('superAdmin holds every role and bypasses every claim check', () => {
    for (const role of ROLE_NAMES) assert.equal(holdsRole(superAdmin, role), true);
    assert.equal(canAccess(superAdmin, { org: 'elsewhere' }), true);
    assert.equal(canSeeEntry(superAdmin, { org: 'elsewhere' }), true);
    assert.equal(canSeeEntry(superAdmin, {}), true);
  });
  it('auth-only: roles are neither resolved nor enforced, and nothing is filtered', () => {
    assert.deepEqual(authOnly.roles, []);
    for (const role of ROLE_NAMES) assert.equal(holdsRole(authOnly, role), true);
    assert.equal(canAccess(authOnly, { org: 'elsewhere' }), true);
    assert.equal(canSeeEntry(authOnly, {}), true);
    assert.equal(canSeeEntry(authOnly, { org: 'elsewhere' }), true);
  });
  it('anonymous: every check is bypassed', () => {
    assert.equal(ANONYMOUS_CALLER.subject, null);
    for (const role of ROLE_NAMES) assert.equal(holdsRole(ANONYMOUS_CALLER, role), true);
    assert.equal(canAccess(ANONYMOUS_CALLER, { org: 'x' }), true);
    assert.equal(canSeeEntry(ANONYMOUS_CALLER, {}), true);
  });
});
