/**
 * The token validator against an issuer whose keys the test controls (discovery + JWKS on
 * loopback): what it accepts, and a negative case for every check.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { exportSPKI, importJWK, SignJWT, type CryptoKey } from 'jose';
import type { TokenValidator } from '../../plugins/incoming-auth/contract.ts';
import { b64url, KeyIssuer } from './helpers/key-issuer.ts';
import { assertInvalidToken, AUDIENCE, Clock, validatorFor } from './helpers/validator.ts';

describe('validator: accepted tokens', () => {
  let issuer: KeyIssuer;
  before(async () => {
    issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
    await issuer.addKey('RS256');
    await issuer.addKey('EdDSA');
  });
  after(() => issuer.close());

  it('verifies ES256, RS256 and EdDSA tokens; a repeat is a synchronous cache hit', async () => {
    const clock = new Clock();
    const validator = await validatorFor(issuer, clock);
    for (const key of issuer.keys) {
      const token = await issuer.mint(issuer.claims(AUDIENCE, { sub: `user-${key.alg}`, scope: 'mcp:tools' }), key);
      const first = validator.verify(token);
      assert.ok(first instanceof Promise, 'the first verification is asynchronous');
      const verified = await first;
      assert.equal(verified.subject, `user-${key.alg}`);
      assert.equal(verified.issuer, issuer.url);
      assert.equal(verified.claims.scope, 'mcp:tools');
      const again = validator.verify(token);
      assert.ok(!(again instanceof Promise), 'a cache hit is synchronous');
      assert.equal(again, verified);
    }
    assert.equal(issuer.jwksRequests, 1);
    validator.close();
  });

  it('accepts an audience array that contains ours, and expiry within the clock leeway', async () => {
    const clock = new Clock();
    const validator = await validatorFor(issuer, clock);
    await validator.verify(await issuer.mint(issuer.claims(['other', AUDIENCE])));
    const now = Math.floor(clock.now() / 1000);
    await validator.verify(await issuer.mint(issuer.claims(AUDIENCE, { exp: now - 10, iat: now - 100 })));
    await validator.verify(await issuer.mint(issuer.claims(AUDIENCE, { nbf: now + 10, iat: now + 10 })));
    validator.close();
  });

  it('accepts a token without kid: the one key of its algorithm, or jose trying each candidate', async () => {
    const clock = new Clock();
    const validator = await validatorFor(issuer, clock);
    const es = issuer.keys.find((k) => k.alg === 'ES256')!;
    assert.equal((await validator.verify(await issuer.mint(issuer.claims(AUDIENCE, { sub: 'no-kid' }), es, { kid: undefined }))).subject, 'no-kid');
    const second = await issuer.addKey('ES256');
    clock.advance(30);
    await validator.verify(await issuer.mint(issuer.claims(AUDIENCE), second)); // learns the new key (one refetch)
    const ambiguous = await issuer.mint(issuer.claims(AUDIENCE, { sub: 'ambiguous' }), second, { kid: undefined });
    assert.equal((await validator.verify(ambiguous)).subject, 'ambiguous');
    issuer.removeKey(second.kid);
    validator.close();
  });

  it('shares one verification between concurrent first uses of a token', async () => {
    const clock = new Clock();
    const validator = await validatorFor(issuer, clock);
    const token = await issuer.mint(issuer.claims(AUDIENCE));
    const results = await Promise.all(Array.from({ length: 10 }, () => validator.verify(token)));
    assert.ok(results.every((r) => r === results[0]));
    validator.close();
  });

  it('gives a token under a copied signature none of the genuine one: not its pending check, not its cache entry', async () => {
    const clock = new Clock();
    const validator = await validatorFor(issuer, clock);
    const token = await issuer.mint(issuer.claims(AUDIENCE, { sub: 'alice' }));
    const [header, , signature] = token.split('.');
    const forged = `${header}.${b64url(issuer.claims(AUDIENCE, { sub: 'admin' }))}.${signature}`;
    // While the genuine token is still being verified, then once it is cached.
    const [genuine, whilePending] = await Promise.allSettled([validator.verify(token), validator.verify(forged)]);
    assert.equal(genuine.status === 'fulfilled' && genuine.value.subject, 'alice');
    assert.equal(whilePending.status === 'rejected' && (whilePending.reason as { description: string }).description, 'the token signature is invalid');
    await assertInvalidToken(validator, forged, /signature is invalid/);
    assert.equal((validator.verify(token) as { subject: string }).subject, 'alice', 'the genuine token is still a synchronous hit');
    validator.close();
  });
  it('keeps a verified token until its exp, then refuses it as expired', async () => {
    const clock = new Clock();
    const validator = await validatorFor(issuer, clock, { clockToleranceSeconds: 0 });
    const now = Math.floor(clock.now() / 1000);
    const token = await issuer.mint(issuer.claims(AUDIENCE, { exp: now + 60 }));
    await validator.verify(token);
    clock.advance(59);
    assert.ok(!(validator.verify(token) instanceof Promise));
    clock.advance(1);
    await assertInvalidToken(validator, token, /expired/);
    validator.close();
  });
});

describe('validator: refused tokens', () => {
  let issuer: KeyIssuer;
  let validator: TokenValidator;
  let clock: Clock;
  const now = Math.floor(Date.now() / 1000);
  before(async () => {
    issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
    await issuer.addKey('RS256');
    clock = new Clock();
    validator = await validatorFor(issuer, clock);
    await validator.warm();
  });
  after(async () => {
    validator.close();
    await issuer.close();
  });

  const cases: [string, () => Promise<string>, RegExp][] = [
    ['wrong audience', () => issuer.mint(issuer.claims('https://other.example.com/mcp')), /not meant for this resource/],
    ['wrong issuer', () => issuer.mint(issuer.claims(AUDIENCE, { iss: 'https://evil.example.com' })), /expected issuer/],
    ['expired', () => issuer.mint(issuer.claims(AUDIENCE, { iat: now - 7200, exp: now - 3600 })), /expired/],
    ['not yet valid', () => issuer.mint(issuer.claims(AUDIENCE, { nbf: now + 3600 })), /not valid yet/],
    ['issued in the future', () => issuer.mint(issuer.claims(AUDIENCE, { iat: now + 3600 })), /issued in the future/],
    ['no exp', () => issuer.mint({ iss: issuer.url, aud: AUDIENCE, sub: 'u', iat: now }), /no valid expiry/],
    ['exp not a number', () => issuer.mint({ iss: issuer.url, aud: AUDIENCE, sub: 'u', iat: now, exp: 'tomorrow' as unknown as number }), /no valid expiry|malformed/],
    ['no sub', () => issuer.mint({ iss: issuer.url, aud: AUDIENCE, iat: now, exp: now + 600 }), /no subject/],
    ['alg none', async () => `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(issuer.claims(AUDIENCE))}.`, /alg "none"/],
    ['alg none with a known kid', async () => `${b64url({ alg: 'none', kid: issuer.keys[0]!.kid })}.${b64url(issuer.claims(AUDIENCE))}.`, /alg "none"/],
    [
      'HS256 signed with the public key (PEM) as HMAC secret',
      async () => {
        const rsa = issuer.keys[1]!;
        const pem = await exportSPKI(await importJWK(rsa.publicJwk, 'RS256', { extractable: true }) as CryptoKey);
        return new SignJWT(issuer.claims(AUDIENCE)).setProtectedHeader({ alg: 'HS256', kid: rsa.kid }).sign(new TextEncoder().encode(pem));
      },
      /symmetric algorithms \(alg "HS256"\)/,
    ],
    [
      'HS256 signed with the public JWK as HMAC secret',
      async () => {
        const es = issuer.keys[0]!;
        return new SignJWT(issuer.claims(AUDIENCE)).setProtectedHeader({ alg: 'HS256', kid: es.kid }).sign(new TextEncoder().encode(JSON.stringify(es.publicJwk)));
      },
      /symmetric algorithms/,
    ],
    ['an algorithm no key declares (ES384)', async () => `${b64url({ alg: 'ES384', kid: issuer.keys[0]!.kid })}.${b64url(issuer.claims(AUDIENCE))}.c2ln`, /not one the issuer's keys use/],
    [
      'tampered payload (signature of another payload)',
      async () => {
        const [header, , signature] = (await issuer.mint(issuer.claims(AUDIENCE))).split('.');
        return `${header}.${b64url(issuer.claims(AUDIENCE, { sub: 'admin' }))}.${signature}`;
      },
      /signature is invalid/,
    ],
    [
      'RS256 header on the ES256 key id',
      async () => {
        const [, payload, signature] = (await issuer.mint(issuer.claims(AUDIENCE))).split('.');
        return `${b64url({ alg: 'RS256', kid: issuer.keys[0]!.kid })}.${payload}.${signature}`;
      },
      /unknown kid|signature/,
    ],
    ['not a JWT (and no introspection)', async () => 'opaque-token-value', /not a JWT/],
    ['a JWE', async () => 'eyJhbGciOiJSU0EtT0FFUCJ9.a.b.c.d', /encrypted tokens/],
    ['garbage in three parts', async () => 'not.a.jwt', /malformed/],
  ];

  for (const [name, mint, description] of cases) {
    it(`refuses: ${name}`, async () => {
      await assertInvalidToken(validator, await mint(), description);
    });
  }

  it('refuses a token signed with an unpublished key (unknown kid) after at most one refetch', async () => {
    const rogue = await issuer.addKey('ES256', false, 'rogue');
    const before = issuer.jwksRequests;
    await assertInvalidToken(validator, await issuer.mint(issuer.claims(AUDIENCE), rogue), /unknown kid/);
    assert.ok(issuer.jwksRequests - before <= 1);
  });
});
