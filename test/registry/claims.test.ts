/**
 * The claims engine's containment rule: the table of plugins/registry-authz/README.md case by case, then its laws as
 * properties (fast-check), including that the SQL encoding (pairs ⊆ pairs) decides exactly what
 * `claimsSatisfy` decides.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { callerClaimPairs, claimsSatisfy, claimValueMatches, hasClaims, resourceClaimPairs, sameClaims, unheldClaims, type ClaimMap } from '../../plugins/registry-authz/claims.ts';

describe('claim containment: the table of cases', () => {
  it('{org} is satisfied by {org, team} with org equal: allowed', () => {
    assert.equal(claimsSatisfy({ org: 'acme', team: 'platform' }, { org: 'acme' }), true);
  });
  it('{org, team} is not satisfied by {org}: denied', () => {
    assert.equal(claimsSatisfy({ org: 'acme' }, { org: 'acme', team: 'platform' }), false);
  });
  it('no claims on the resource: allowed for any caller, even one without claims', () => {
    assert.equal(claimsSatisfy({}, {}), true);
    assert.equal(claimsSatisfy({ org: 'acme', groups: ['a', 'b'] }, {}), true);
  });
  it('{org=a} is not satisfied by {org=b}: denied', () => {
    assert.equal(claimsSatisfy({ org: 'b' }, { org: 'a' }), false);
  });
});

describe('claim values', () => {
  it('an array JWT claim matches when any element equals the required value', () => {
    assert.equal(claimsSatisfy({ team: ['data', 'platform'] }, { team: 'platform' }), true);
    assert.equal(claimsSatisfy({ team: ['data'] }, { team: 'platform' }), false);
    assert.equal(claimsSatisfy({ team: [] }, { team: 'platform' }), false);
  });
  it('only strings match: numbers, booleans, objects and nested arrays never do', () => {
    assert.equal(claimValueMatches(3, '3'), false);
    assert.equal(claimValueMatches(true, 'true'), false);
    assert.equal(claimValueMatches({ team: 'a' }, 'a'), false);
    assert.equal(claimValueMatches([['a']], 'a'), false);
    assert.equal(claimValueMatches(null, 'null'), false);
  });
  it('inherited properties are not claims', () => {
    assert.equal(claimsSatisfy({}, { toString: 'x' }), false);
    assert.equal(claimsSatisfy(Object.create({ org: 'acme' }) as Record<string, unknown>, { org: 'acme' }), false);
  });
  it('unheldClaims names what is missing', () => {
    assert.deepEqual(unheldClaims({ org: 'acme', team: ['a'] }, { org: 'acme', team: 'b', env: 'prod' }), ['team', 'env']);
  });
});

// ---- Laws ---------------------------------------------------------------------------------

const key = fc.constantFrom('org', 'team', 'env', 'role', 'groups', 'a.b', 'with space', '["x"]');
const value = fc.constantFrom('acme', 'platform', 'data', 'prod', '', 'A', 'x,y', '"quoted"');
const claimMap: fc.Arbitrary<ClaimMap> = fc.dictionary(key, value, { maxKeys: 4 });
const callerValue = fc.oneof(value, fc.array(value, { maxLength: 3 }), fc.integer(), fc.boolean());
const caller = fc.dictionary(key, callerValue, { maxKeys: 5 });

function subset(small: readonly string[], big: readonly string[]): boolean {
  const set = new Set(big);
  return small.every((item) => set.has(item));
}

describe('claim containment: laws', () => {
  it('a resource without claims is satisfied by every caller', () => {
    fc.assert(fc.property(caller, (c) => claimsSatisfy(c, {})));
  });

  it('reflexive: claims satisfy themselves', () => {
    fc.assert(fc.property(claimMap, (m) => claimsSatisfy(m, m)));
  });

  it('the caller satisfies the resource iff it holds every pair (the definition)', () => {
    fc.assert(
      fc.property(caller, claimMap, (c, r) => {
        const holdsEach = Object.entries(r).every(([k, v]) => {
          const held = c[k];
          return held === v || (Array.isArray(held) && (held as readonly unknown[]).includes(v));
        });
        return claimsSatisfy(c, r) === holdsEach;
      }),
    );
  });

  it('monotonic: more caller claims never lose access; more resource claims never grant it', () => {
    fc.assert(
      fc.property(caller, caller, claimMap, claimMap, (c, extraCaller, r, extraResource) => {
        const moreCaller = { ...extraCaller, ...c };
        const moreResource = { ...extraResource, ...r };
        if (claimsSatisfy(c, r) && !claimsSatisfy(moreCaller, r)) return false;
        if (claimsSatisfy(c, moreResource) && !claimsSatisfy(c, r)) return false;
        return true;
      }),
    );
  });

  it('transitive over claim maps: a ⊇ b and b ⊇ c give a ⊇ c', () => {
    fc.assert(fc.property(claimMap, claimMap, claimMap, (a, b, c) => !(claimsSatisfy(a, b) && claimsSatisfy(b, c)) || claimsSatisfy(a, c)));
  });

  it('an array claim is the OR of its elements', () => {
    fc.assert(
      fc.property(key, fc.array(value, { maxLength: 4 }), value, (k, elements, required) => {
        const any = elements.some((element) => claimsSatisfy({ [k]: element }, { [k]: required }));
        return claimsSatisfy({ [k]: elements }, { [k]: required }) === any;
      }),
    );
  });

  it('the SQL encoding decides the same: resource pairs ⊆ caller pairs', () => {
    fc.assert(fc.property(caller, claimMap, (c, r) => claimsSatisfy(c, r) === subset(resourceClaimPairs(r), callerClaimPairs(c))));
  });

  it('the pair encoding is injective: distinct maps have distinct pair sets', () => {
    fc.assert(fc.property(claimMap, claimMap, (a, b) => sameClaims(a, b) === (JSON.stringify(resourceClaimPairs(a)) === JSON.stringify(resourceClaimPairs(b)))));
  });

  it('sameClaims is an equivalence that ignores key order', () => {
    fc.assert(
      fc.property(claimMap, claimMap, (a, b) => {
        const reversed = Object.fromEntries(Object.entries(a).reverse());
        return sameClaims(a, a) && sameClaims(a, reversed) && sameClaims(a, b) === sameClaims(b, a) && sameClaims(a, b) === (claimsSatisfy(a, b) && claimsSatisfy(b, a));
      }),
    );
  });

  it('hasClaims is "not the empty map"', () => {
    fc.assert(fc.property(claimMap, (m) => hasClaims(m) === Object.keys(m).length > 0));
  });
});
