/**
 * The verified-token cache: keyed by a hash of the whole token, each entry until the token's
 * exp (never longer), bounded, frozen. Time is an injected clock.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { VerifiedToken } from '../../plugins/incoming-auth/contract.ts';
import { tokenCacheKey, VerifiedTokenCache } from '../../plugins/incoming-auth/token-cache.ts';

function clock(start = 1_800_000_000_000): { now: () => number; advance(ms: number): void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

function verified(expiresAt: number, subject = 'alice'): VerifiedToken {
  return { subject, issuer: 'https://id.example.com', claims: { sub: subject, exp: expiresAt, nested: { roles: ['a'] } }, expiresAt };
}

describe('tokenCacheKey', () => {
  it('is SHA-256 of the whole token: 32 chars, different for any change, and no part of the token', () => {
    const token = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl';
    const key = tokenCacheKey(token);
    assert.equal(key.length, 32);
    assert.equal(tokenCacheKey(token), key, 'stable');
    // Same signature, different payload: a different key (the cache is never keyed by the signature alone).
    assert.notEqual(tokenCacheKey('eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJtYWxsb3J5In0.c2lnbmF0dXJl'), key);
    assert.notEqual(tokenCacheKey(token + 'x'), key);
    assert.ok(!key.includes('c2lnbmF0dXJl') && !key.includes('eyJ'));
  });
});

describe('VerifiedTokenCache', () => {
  it('keeps an entry until the token exp, then forgets it', () => {
    const c = clock();
    const cache = new VerifiedTokenCache({ max: 10, now: c.now });
    const exp = c.now() / 1000 + 10;
    cache.set('k', verified(exp));
    c.advance(9_900);
    assert.equal(cache.get('k')?.subject, 'alice');
    c.advance(100);
    assert.equal(cache.get('k'), undefined, 'expired at exp');
  });

  it('does not cache a token that has already expired', () => {
    const c = clock();
    const cache = new VerifiedTokenCache({ max: 10, now: c.now });
    cache.set('k', verified(c.now() / 1000 - 1));
    cache.set('j', verified(c.now() / 1000));
    assert.equal(cache.size, 0);
  });

  it('keeps an entry only until its validUntil when that comes before exp (capped introspection results)', () => {
    const c = clock();
    const cache = new VerifiedTokenCache({ max: 10, now: c.now });
    cache.set('k', { ...verified(c.now() / 1000 + 3600), validUntil: c.now() + 5_000 });
    c.advance(4_999);
    assert.ok(cache.get('k'));
    c.advance(1);
    assert.equal(cache.get('k'), undefined);
  });

  it('is bounded: the least recently used entry goes first', () => {
    const c = clock();
    const cache = new VerifiedTokenCache({ max: 3, now: c.now });
    const exp = c.now() / 1000 + 600;
    for (const k of ['a', 'b', 'c']) cache.set(k, verified(exp, k));
    assert.ok(cache.get('a')); // a is now the most recently used
    cache.set('d', verified(exp, 'd'));
    assert.equal(cache.size, 3);
    assert.equal(cache.get('b'), undefined, 'b was the least recently used');
    assert.deepEqual(['a', 'c', 'd'].map((k) => cache.get(k)?.subject), ['a', 'c', 'd']);
  });

  it('freezes entries deeply: plugins after incoming auth share them read-only', () => {
    const c = clock();
    const cache = new VerifiedTokenCache({ max: 3, now: c.now });
    cache.set('k', verified(c.now() / 1000 + 60));
    const entry = cache.get('k')!;
    assert.ok(Object.isFrozen(entry) && Object.isFrozen(entry.claims));
    assert.throws(() => {
      ((entry.claims as Record<string, { roles: string[] }>).nested!.roles).push('admin');
    }, TypeError);
  });
});
