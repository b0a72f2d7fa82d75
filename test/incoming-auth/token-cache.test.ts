/**
 * The verified-token cache: slotted by the token's signature, each entry answering only the very
 * token it was made for, until the token's exp (never longer), bounded, frozen. Time is an
 * injected clock.
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

const SIGNATURE = 'MEUCIQDx5f0r1Z1hQ6T0bq8c2lnbmF0dXJlLW9mLWFuLWVzMjU2LXRva2Vu';
const TOKEN = `eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.${SIGNATURE}`;

describe('tokenCacheKey', () => {
  it("is the last 32 chars of a JWS signature; anything else is its own slot, hashed when long", () => {
    assert.equal(tokenCacheKey(TOKEN), SIGNATURE.slice(-32));
    assert.equal(tokenCacheKey('eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln'), 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln', 'a short signature: the whole token');
    assert.equal(tokenCacheKey('a.b.'), 'a.b.', 'an unsigned token: the whole token (it is never cached: it fails verification)');
    assert.equal(tokenCacheKey('opaque-token-with-no-dots-and-more-than-32-chars'), 'opaque-token-with-no-dots-and-more-than-32-chars');
    const long = 'o'.repeat(5000);
    const key = tokenCacheKey(long);
    assert.equal(key.length, 32, 'SHA-256, binary');
    assert.equal(tokenCacheKey(long), key, 'stable');
    assert.notEqual(tokenCacheKey(`${long}t`), key);
  });
});

describe('VerifiedTokenCache', () => {
  it('keeps an entry until the token exp, then forgets it', () => {
    const c = clock();
    const cache = new VerifiedTokenCache({ max: 10, now: c.now });
    const exp = c.now() / 1000 + 10;
    cache.set('k', 'tk', verified(exp));
    c.advance(9_900);
    assert.equal(cache.get('k', 'tk')?.subject, 'alice');
    c.advance(100);
    assert.equal(cache.get('k', 'tk'), undefined, 'expired at exp');
  });

  it('does not cache a token that has already expired', () => {
    const c = clock();
    const cache = new VerifiedTokenCache({ max: 10, now: c.now });
    cache.set('k', 'tk', verified(c.now() / 1000 - 1));
    cache.set('j', 'tj', verified(c.now() / 1000));
    assert.equal(cache.size, 0);
  });

  it('keeps an entry only until its validUntil when that comes before exp (capped introspection results)', () => {
    const c = clock();
    const cache = new VerifiedTokenCache({ max: 10, now: c.now });
    cache.set('k', 'tk', { ...verified(c.now() / 1000 + 3600), validUntil: c.now() + 5_000 });
    c.advance(4_999);
    assert.ok(cache.get('k', 'tk'));
    c.advance(1);
    assert.equal(cache.get('k', 'tk'), undefined);
  });

  it('is bounded: the least recently used entry goes first', () => {
    const c = clock();
    const cache = new VerifiedTokenCache({ max: 3, now: c.now });
    const exp = c.now() / 1000 + 600;
    for (const k of ['a', 'b', 'c']) cache.set(k, `t${k}`, verified(exp, k));
    assert.ok(cache.get('a', 'ta')); // a is now the most recently used
    cache.set('d', 'td', verified(exp, 'd'));
    assert.equal(cache.size, 3);
    assert.equal(cache.get('b', 'tb'), undefined, 'b was the least recently used');
    assert.deepEqual(['a', 'c', 'd'].map((k) => cache.get(k, `t${k}`)?.subject), ['a', 'c', 'd']);
  });

  it('answers only the token an entry was made for: the same signature under another payload is a miss', () => {
    const c = clock();
    const cache = new VerifiedTokenCache({ max: 10, now: c.now });
    cache.set(tokenCacheKey(TOKEN), TOKEN, verified(c.now() / 1000 + 60));
    assert.equal(cache.get(tokenCacheKey(TOKEN), TOKEN)?.subject, 'alice');
    const tampered = `eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJtYWxsb3J5In0.${SIGNATURE}`; // sub "mallory", same signature
    assert.equal(tokenCacheKey(tampered), tokenCacheKey(TOKEN), 'same slot');
    assert.equal(cache.get(tokenCacheKey(tampered), tampered), undefined);
    assert.equal(cache.get(tokenCacheKey(TOKEN), `${TOKEN} `), undefined);
  });

  it('freezes entries deeply: plugins after incoming auth share them read-only', () => {
    const c = clock();
    const cache = new VerifiedTokenCache({ max: 3, now: c.now });
    cache.set('k', 'tk', verified(c.now() / 1000 + 60));
    const entry = cache.get('k', 'tk')!;
    assert.ok(Object.isFrozen(entry) && Object.isFrozen(entry.claims));
    assert.throws(() => {
      ((entry.claims as Record<string, { roles: string[] }>).nested!.roles).push('admin');
    }, TypeError);
  });
});
