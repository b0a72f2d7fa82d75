/**
 * The registry's per-entry and per-request authorization costs (plugins/registry-authz/): the
 * containment check of one entry (what filtering costs per entry when done in JS), the caller's
 * claim pairs (computed once per request for the SQL filter), role resolution (once per
 * request), and the version sort key (once per published version).
 *
 * The listing and publish figures over HTTP and both databases: bench/plugins/registry-store.ts.
 */
import type { Bench } from 'tinybench';
import { authenticatedCaller, canSeeEntry } from '../../plugins/registry-authz/caller.ts';
import { callerClaimPairs, claimsSatisfy, resourceClaimPairs } from '../../plugins/registry-authz/claims.ts';
import { resolveRoles, type RoleRules } from '../../plugins/registry-authz/roles.ts';
import { versionSortKey } from '../../plugins/registry/store/version-order.ts';

/** A realistic JWT payload: registered claims, a string org, array claims for teams and groups. */
const JWT = {
  iss: 'https://login.example.com/realms/acme',
  sub: '0f6c2d9e-3b1a-4c7e-9d2f-8a5b4c3d2e1f',
  aud: 'mcp-registry',
  exp: 1_900_000_000,
  iat: 1_800_000_000,
  org: 'acme',
  team: ['platform', 'sre'],
  groups: ['everyone', 'publishers', 'oncall', 'eu-staff', 'readers', 'mcp-users'],
  role: 'writer',
};
const ENTRY_VISIBLE = { org: 'acme', team: 'sre' };
const ENTRY_HIDDEN = { org: 'acme', team: 'data' };
const ENTRIES = Array.from({ length: 100 }, (_, i) => (i % 2 === 0 ? ENTRY_VISIBLE : ENTRY_HIDDEN));
const RULES: RoleRules = {
  superAdmin: [{ role: 'super-admin' }],
  manageSources: [{ role: 'admin' }, { groups: 'platform-admins', org: 'acme' }],
  manageRegistries: [{ role: 'admin' }],
  manageEntries: [{ role: 'writer' }, { groups: 'publishers', org: 'acme' }],
};
const CALLER = authenticatedCaller('full', JWT.sub, JWT, RULES);

export let sink: unknown;

export default function register(bench: Bench): void {
  bench
    .add('registry-authz: claimsSatisfy, one entry (array claim, match)', () => {
      sink = claimsSatisfy(JWT, ENTRY_VISIBLE);
    })
    .add('registry-authz: claimsSatisfy, one entry (no match)', () => {
      sink = claimsSatisfy(JWT, ENTRY_HIDDEN);
    })
    .add('registry-authz: canSeeEntry over a page of 100 entries', () => {
      let visible = 0;
      for (const entry of ENTRIES) if (canSeeEntry(CALLER, entry)) visible++;
      sink = visible;
    })
    .add('registry-authz: callerClaimPairs (once per request, SQL filter)', () => {
      sink = callerClaimPairs(JWT);
    })
    .add('registry-authz: resourceClaimPairs (once per written entry)', () => {
      sink = resourceClaimPairs(ENTRY_VISIBLE);
    })
    .add('registry-authz: resolveRoles, 4 roles / 6 maps (once per request)', () => {
      sink = resolveRoles(JWT, RULES);
    })
    .add('registry: versionSortKey("1.10.0-rc.2")', () => {
      sink = versionSortKey('1.10.0-rc.2');
    });
}
