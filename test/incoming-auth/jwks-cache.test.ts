/**
 * The JWKS cache: freshness from Cache-Control within bounds, stale keys while the issuer is
 * unreachable, coalesced and rate-limited fetches. Time is an injected clock; the "issuer" is a
 * function, so no test waits.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { createLogger } from '../../core/observe/log.ts';
import { JwksCache, maxAgeOf, type FetchedJwks } from '../../plugins/incoming-auth/jwks-cache.ts';
import { algorithmsOf, keySetOf } from '../../plugins/incoming-auth/key-set.ts';

const URI = 'https://id.example.com/jwks';

async function publicJwk(alg: 'ES256' | 'RS256', kid: string): Promise<JWK> {
  const { publicKey } = await generateKeyPair(alg, { extractable: true });
  return { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
}

interface FakeIssuer {
  fetches: number;
  answer: () => FetchedJwks | Promise<FetchedJwks>;
  fetch: (uri: string) => Promise<FetchedJwks>;
}

function fakeIssuer(jwks: { keys: JWK[] }, cacheControl: string | null = null): FakeIssuer {
  const issuer: FakeIssuer = {
    fetches: 0,
    answer: () => ({ json: jwks, cacheControl }),
    fetch: async () => {
      issuer.fetches++;
      return issuer.answer();
    },
  };
  return issuer;
}

function setup(issuer: FakeIssuer, overrides: Partial<{ minAgeMs: number; maxAgeMs: number; defaultAgeMs: number; cooldownMs: number }> = {}) {
  let t = 1_800_000_000_000;
  const cache = new JwksCache({
    fetch: issuer.fetch,
    now: () => t,
    log: createLogger('silent'),
    minAgeMs: 60_000,
    maxAgeMs: 86_400_000,
    defaultAgeMs: 600_000,
    cooldownMs: 30_000,
    ...overrides,
  });
  return { cache, advance: (ms: number) => void (t += ms) };
}

/** Lets background refreshes settle. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('maxAgeOf / freshness bounds', () => {
  it('reads max-age, treats no-store/no-cache as 0, and null when absent', () => {
    assert.equal(maxAgeOf('public, max-age=3600'), 3600);
    assert.equal(maxAgeOf('max-age="120", must-revalidate'), 120);
    assert.equal(maxAgeOf('no-store'), 0);
    assert.equal(maxAgeOf('private, no-cache'), 0);
    assert.equal(maxAgeOf('public'), null);
    assert.equal(maxAgeOf(null), null);
    assert.equal(maxAgeOf('s-maxage=10'), null);
  });

  it('clamps the issuer max-age to [min, max] and uses the default without one', async () => {
    const { cache } = setup(fakeIssuer({ keys: [] }));
    assert.equal(cache.freshnessMs('max-age=120'), 120_000);
    assert.equal(cache.freshnessMs('max-age=5'), 60_000, 'raised to the minimum');
    assert.equal(cache.freshnessMs('no-store'), 60_000, 'an issuer cannot make us fetch per request');
    assert.equal(cache.freshnessMs('max-age=999999999'), 86_400_000, 'lowered to the maximum');
    assert.equal(cache.freshnessMs(null), 600_000, 'default');
  });
});

describe('JwksCache', () => {
  it('fetches once and serves the keys until the issuer max-age has passed', async () => {
    const issuer = fakeIssuer({ keys: [await publicJwk('ES256', 'a')] }, 'max-age=120');
    const { cache, advance } = setup(issuer);
    const keys = await cache.keys(URI);
    assert.deepEqual([...keys.kids], ['a']);
    advance(119_000);
    await cache.keys(URI);
    assert.equal(issuer.fetches, 1);
    advance(1_000);
    assert.equal(await cache.keys(URI), keys, 'stale keys are served at once');
    await settle();
    assert.equal(issuer.fetches, 2, 'and refreshed in the background');
  });

  it('coalesces concurrent first fetches into one', async () => {
    const issuer = fakeIssuer({ keys: [await publicJwk('ES256', 'a')] });
    const { cache } = setup(issuer);
    await Promise.all(Array.from({ length: 20 }, () => cache.keys(URI)));
    assert.equal(issuer.fetches, 1);
  });

  it('keeps serving stale keys while the issuer is unreachable, retrying at most once per cooldown', async () => {
    const issuer = fakeIssuer({ keys: [await publicJwk('ES256', 'a')] }, 'max-age=60');
    const { cache, advance } = setup(issuer);
    const keys = await cache.keys(URI);
    issuer.answer = () => Promise.reject(new Error('connect ECONNREFUSED'));
    advance(61_000);
    for (let i = 0; i < 10; i++) {
      assert.equal(await cache.keys(URI), keys);
      await settle();
    }
    assert.equal(issuer.fetches, 2, 'one failed refresh attempt, not ten');
    advance(30_000);
    assert.equal(await cache.keys(URI), keys);
    await settle();
    assert.equal(issuer.fetches, 3, 'the next attempt after the cooldown');
    issuer.answer = () => ({ json: { keys: [] }, cacheControl: null }); // an empty set is refused too: stale kept
    advance(30_000);
    await cache.keys(URI);
    await settle();
    assert.equal(await cache.keys(URI), keys);
  });

  it('without any keys yet, a failed fetch fails fast for the cooldown instead of waiting on the issuer again', async () => {
    const issuer = fakeIssuer({ keys: [] });
    issuer.answer = () => Promise.reject(new Error('connect ECONNREFUSED'));
    const { cache, advance } = setup(issuer);
    await assert.rejects(cache.keys(URI), /ECONNREFUSED/);
    await assert.rejects(cache.keys(URI), /failed less than 30s ago/);
    assert.equal(issuer.fetches, 1);
    advance(30_000);
    issuer.answer = async () => ({ json: { keys: [await publicJwk('ES256', 'a')] }, cacheControl: null });
    assert.equal((await cache.keys(URI)).size, 1);
  });

  it('refetches for an unknown kid at most once per cooldown', async () => {
    const issuer = fakeIssuer({ keys: [await publicJwk('ES256', 'a')] });
    const { cache, advance } = setup(issuer);
    await cache.keys(URI);
    assert.equal(await cache.refreshForUnknownKey(URI), null, 'the first fetch was just now: in cooldown');
    advance(30_000);
    const rotated = { keys: [await publicJwk('ES256', 'a'), await publicJwk('ES256', 'b')] };
    issuer.answer = () => ({ json: rotated, cacheControl: null });
    const storm = await Promise.all(Array.from({ length: 50 }, () => cache.refreshForUnknownKey(URI)));
    assert.equal(issuer.fetches, 2, 'fifty unknown kids, one fetch');
    assert.deepEqual([...storm[0]!.kids].sort(), ['a', 'b']);
    assert.equal(await cache.refreshForUnknownKey(URI), null);
    assert.equal(issuer.fetches, 2);
    assert.deepEqual([...(await cache.keys(URI)).kids].sort(), ['a', 'b'], 'the new set replaced the old one');
  });
});

describe('keySetOf', () => {
  it('keeps public asymmetric signing keys and the algorithms they declare', async () => {
    const es = await publicJwk('ES256', 'es');
    const rsNoAlg = { ...(await publicJwk('RS256', 'rs')) };
    delete rsNoAlg.alg;
    const set = await keySetOf({ keys: [es, rsNoAlg, { kty: 'oct', k: 'c2VjcmV0', kid: 'hmac', alg: 'HS256' }] });
    assert.equal(set.size, 2, 'the symmetric key is dropped');
    assert.deepEqual([...set.algorithms].sort(), ['ES256', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512']);
  });

  it('drops encryption keys, keys with a mismatched alg, and strips private members', async () => {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const priv = { ...(await exportJWK(privateKey)), kid: 'leaked', alg: 'ES256' };
    assert.equal(algorithmsOf({ ...(await publicJwk('ES256', 'x')), use: 'enc' }).length, 0);
    assert.equal(algorithmsOf({ ...(await publicJwk('ES256', 'x')), alg: 'HS256' }).length, 0);
    assert.equal(algorithmsOf({ ...(await publicJwk('ES256', 'x')), alg: 'ES384' }).length, 0, 'P-256 key cannot be ES384');
    assert.equal(algorithmsOf({ kty: 'oct', k: 'abc' }).length, 0);
    const set = await keySetOf({ keys: [priv] });
    assert.equal(set.size, 1, 'a private JWK is used for its public part only');
  });

  it('refuses a document without usable keys', async () => {
    await assert.rejects(keySetOf({}), /no "keys" array/);
    await assert.rejects(keySetOf({ keys: [{ kty: 'oct', k: 'abc' }] }), /no usable public signing key/);
    await assert.rejects(keySetOf({ keys: [{ kty: 'EC', crv: 'P-256', x: 'bad', y: 'bad', alg: 'ES256' }] }), /no usable public signing key/);
  });

  it('lists the imported keys a token may be signed with, by kid and alg', async () => {
    const a = await publicJwk('ES256', 'a');
    const b = await publicJwk('ES256', 'b');
    const set = await keySetOf({ keys: [a, b] });
    assert.equal(set.candidates('a', 'ES256').length, 1);
    assert.notEqual(set.candidates('a', 'ES256')[0], set.candidates('b', 'ES256')[0]);
    assert.equal(set.candidates('a', 'RS256').length, 0);
    assert.equal(set.candidates('c', 'ES256').length, 0);
    assert.equal(set.candidates(undefined, 'ES256').length, 2, 'no kid: every key of the algorithm, tried in turn');
  });

  it('drops RSA keys shorter than 2048 bits', async () => {
    const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    await assert.rejects(keySetOf({ keys: [{ ...(publicKey.export({ format: 'jwk' }) as JWK), kid: 'weak', alg: 'RS256' }] }), /no usable public signing key/);
  });
});
