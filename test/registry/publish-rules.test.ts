/**
 * The claims rules of publishing: claims required under full authorization, publish claims a
 * subset of the publisher's JWT claims, every later version with the first version's claims;
 * superAdmin and the bypass modes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ANONYMOUS_CALLER, authenticatedCaller } from '../../plugins/registry-authz/caller.ts';
import { claimsSatisfy, sameClaims, type ClaimMap } from '../../plugins/registry-authz/claims.ts';
import { creationClaimsProblem, publishClaimsProblem } from '../../plugins/registry-authz/publish-rules.ts';

const rules = { superAdmin: [{ role: 'root' }], manageEntries: [{ role: 'writer' }] };
const writer = authenticatedCaller('full', 'w', { org: 'acme', team: ['platform', 'data'], role: 'writer' }, rules);
const root = authenticatedCaller('full', 'r', { role: 'root' }, rules);
const authOnly = authenticatedCaller('authOnly', 'a', {}, rules);

describe('publishClaimsProblem', () => {
  it('full authorization: an entry without claims is refused (400 claims_required)', () => {
    const problem = publishClaimsProblem(writer, {}, null);
    assert.equal(problem?.code, 'claims_required');
    assert.equal(problem?.status, 400);
  });
  it('publish claims must be a subset of the JWT claims (403 claims_not_held)', () => {
    assert.equal(publishClaimsProblem(writer, { org: 'acme' }, null), null);
    assert.equal(publishClaimsProblem(writer, { org: 'acme', team: 'data' }, null), null, 'an array claim holds each of its elements');
    const problem = publishClaimsProblem(writer, { org: 'acme', team: 'finance' }, null);
    assert.equal(problem?.code, 'claims_not_held');
    assert.equal(problem?.status, 403);
    assert.match(problem!.description, /"team"="finance"/);
  });
  it('a later version must carry exactly the first version\'s claims (409 claims_mismatch)', () => {
    assert.equal(publishClaimsProblem(writer, { org: 'acme' }, { org: 'acme' }), null);
    const later: ClaimMap[] = [{ org: 'acme', team: 'data' }, { team: 'data' }];
    for (const requested of later) {
      const problem = publishClaimsProblem(writer, requested, { org: 'acme' });
      assert.equal(problem?.code, 'claims_mismatch');
      assert.equal(problem?.status, 409);
    }
  });
  it('superAdmin publishes without claim validation, but versions still share their claims', () => {
    assert.equal(publishClaimsProblem(root, {}, null), null);
    assert.equal(publishClaimsProblem(root, { org: 'anything' }, null), null);
    assert.equal(publishClaimsProblem(root, { org: 'other' }, { org: 'acme' })?.code, 'claims_mismatch');
  });
  it('anonymous and auth-only modes skip the claim checks; the versions rule still holds', () => {
    for (const caller of [ANONYMOUS_CALLER, authOnly]) {
      assert.equal(publishClaimsProblem(caller, {}, null), null);
      assert.equal(publishClaimsProblem(caller, { org: 'x' }, null), null);
      assert.equal(publishClaimsProblem(caller, {}, { org: 'x' })?.code, 'claims_mismatch');
    }
  });

  const map: fc.Arbitrary<ClaimMap> = fc.dictionary(fc.constantFrom('org', 'team'), fc.constantFrom('acme', 'data', 'platform'), { maxKeys: 2 });
  it('law: for an existing entry, the verdict is claims_mismatch iff the claims differ (once the claim checks pass)', () => {
    fc.assert(
      fc.property(map, map, (requested, existing) => {
        const problem = publishClaimsProblem(root, requested, existing);
        return (problem?.code === 'claims_mismatch') === !sameClaims(requested, existing);
      }),
    );
  });
  it('law: for a restricted publisher, a new entry is accepted iff it has claims and the publisher holds them all', () => {
    fc.assert(
      fc.property(map, (requested) => {
        const accepted = publishClaimsProblem(writer, requested, null) === null;
        return accepted === (Object.keys(requested).length > 0 && claimsSatisfy(writer.claims, requested));
      }),
    );
  });
});

describe('creationClaimsProblem (sources and registries)', () => {
  it('the claims of a new resource must be a subset of the caller\'s', () => {
    assert.equal(creationClaimsProblem(writer, { org: 'acme' }, 'source'), null);
    assert.equal(creationClaimsProblem(writer, {}, 'source'), null);
    assert.equal(creationClaimsProblem(writer, { org: 'contoso' }, 'registry')?.status, 403);
    assert.equal(creationClaimsProblem(root, { org: 'contoso' }, 'registry'), null);
  });
});
