/**
 * "Latest" ordering: semver precedence (semver.org §11) encoded as byte-ordered text, so the
 * database orders versions with a plain ORDER BY; non-semver versions rank below semver ones.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { isSemver, versionSortKey } from '../../plugins/registry/store/version-order.ts';

/** Reference comparator, written from the semver specification. */
function compareSemver(a: string, b: string): number {
  const split = (v: string) => {
    const [core, pre] = v.split('+')[0]!.split(/-(.*)/s) as [string, string | undefined];
    return { core: core.split('.').map(BigInt), pre: pre === undefined ? null : pre.split('.') };
  };
  const x = split(a);
  const y = split(b);
  for (let i = 0; i < 3; i++) if (x.core[i] !== y.core[i]) return x.core[i]! < y.core[i]! ? -1 : 1;
  if (x.pre === null || y.pre === null) return x.pre === y.pre ? 0 : x.pre === null ? 1 : -1;
  for (let i = 0; i < Math.max(x.pre.length, y.pre.length); i++) {
    const p = x.pre[i];
    const q = y.pre[i];
    if (p === undefined) return -1;
    if (q === undefined) return 1;
    const pn = /^\d+$/.test(p);
    const qn = /^\d+$/.test(q);
    if (pn && qn) {
      if (BigInt(p) !== BigInt(q)) return BigInt(p) < BigInt(q) ? -1 : 1;
    } else if (pn !== qn) return pn ? -1 : 1;
    else if (p !== q) return p < q ? -1 : 1;
  }
  return 0;
}

const byteCompare = (a: string, b: string): number => (a === b ? 0 : Buffer.compare(Buffer.from(a), Buffer.from(b)));

describe('versionSortKey', () => {
  it('orders the semver specification example', () => {
    const ordered = ['1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-beta', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0', '1.9.0', '1.10.0', '2.0.0', '10.0.0'];
    const keys = ordered.map(versionSortKey);
    assert.deepEqual([...keys].sort(byteCompare), keys);
  });
  it('ignores build metadata and ranks non-semver versions below semver ones', () => {
    assert.equal(versionSortKey('1.0.0+build.5'), versionSortKey('1.0.0'));
    assert.equal(isSemver('2024-01-01'), false);
    assert.ok(byteCompare(versionSortKey('2024-01-01'), versionSortKey('0.0.1')) < 0);
  });

  const num = fc.oneof(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: 2 ** 40 })).map(String);
  const alnum = fc.stringMatching(/^[0-9A-Za-z-]{1,6}$/).filter((id) => !/^\d+$/.test(id) || !/^0\d/.test(id));
  const preId = fc.oneof(num, alnum);
  const semver = fc
    .tuple(num, num, num, fc.option(fc.array(preId, { minLength: 1, maxLength: 4 }), { nil: undefined }))
    .map(([a, b, c, pre]) => `${a}.${b}.${c}${pre === undefined ? '' : '-' + pre.join('.')}`)
    .filter(isSemver);
  it('law: key order is semver precedence', () => {
    fc.assert(fc.property(semver, semver, (a, b) => Math.sign(byteCompare(versionSortKey(a), versionSortKey(b))) === compareSemver(a, b)), { numRuns: 2000 });
  });
});
