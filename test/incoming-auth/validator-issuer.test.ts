/**
 * The validator over time, with an injected clock (no test waits for a cooldown): key rotation,
 * unknown-kid storms, issuer outages, discovery rules, and option checks at creation.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JWTPayload } from 'jose';
import { GatewayError } from '../../core/base/errors.ts';
import type { TokenValidatorOptions } from '../../plugins/incoming-auth/contract.ts';
import { createTokenValidator } from '../../plugins/incoming-auth/validator.ts';
import { KeyIssuer } from './helpers/key-issuer.ts';
import { AUDIENCE, Clock, log, refusal, validatorFor } from './helpers/validator.ts';

describe('validator: key rotation, unknown-kid storms, issuer outages', () => {
  let issuer: KeyIssuer;
  before(async () => {
    issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
  });
  after(() => issuer.close());

  it('accepts a token with a new kid after one refetch', async () => {
    const clock = new Clock();
    const validator = await validatorFor(issuer, clock);
    await validator.verify(await issuer.mint(issuer.claims(AUDIENCE)));
    const fetched = issuer.jwksRequests;
    const rotated = await issuer.addKey('ES256');
    clock.advance(30); // the cooldown since the first fetch
    const verified = await validator.verify(await issuer.mint(issuer.claims(AUDIENCE, { sub: 'rotated' }), rotated));
    assert.equal(verified.subject, 'rotated');
    assert.equal(issuer.jwksRequests, fetched + 1, 'exactly one refetch');
    validator.close();
  });

  it('an unknown-kid storm triggers at most one refetch per cooldown', async () => {
    const clock = new Clock();
    const validator = await validatorFor(issuer, clock);
    await validator.warm();
    clock.advance(30);
    const start = issuer.jwksRequests;
    const rogue = await issuer.addKey('ES256', false);
    const storm = async (n: number): Promise<void> => {
      const tokens = await Promise.all(Array.from({ length: n }, (_, i) => issuer.mint(issuer.claims(AUDIENCE, { jti: `j${i}` }), rogue, { kid: `random-${i}-${Math.random()}` })));
      const outcomes = await Promise.allSettled(tokens.map(async (t) => validator.verify(t)));
      assert.ok(outcomes.every((o) => o.status === 'rejected' && o.reason instanceof GatewayError && o.reason.code === 'invalid_token'));
    };
    await storm(40);
    await storm(40);
    assert.equal(issuer.jwksRequests - start, 1, 'eighty unknown kids, one fetch');
    clock.advance(30);
    await storm(40);
    assert.equal(issuer.jwksRequests - start, 2, 'one more after the cooldown');
    validator.close();
  });

  it('keeps verifying with cached keys while the issuer is down; unknown keys then get a 503, not a 401', async () => {
    const clock = new Clock();
    const validator = await validatorFor(issuer, clock);
    await validator.verify(await issuer.mint(issuer.claims(AUDIENCE)));
    issuer.down = true;
    try {
      clock.advance(24 * 3600); // far beyond any freshness: the keys are stale
      const at = Math.floor(clock.now() / 1000);
      const fresh = await issuer.mint(issuer.claims(AUDIENCE, { sub: 'during-outage', iat: at, exp: at + 600 }));
      assert.equal((await validator.verify(fresh)).subject, 'during-outage');
      clock.advance(60);
      const rogue = await issuer.addKey('ES256', false);
      const later = await issuer.mint(issuer.claims(AUDIENCE, { iat: at + 60, exp: at + 600 }), rogue);
      const err = await refusal((async () => validator.verify(later))());
      assert.equal(err.code, 'temporarily_unavailable');
      assert.equal(err.status, 503);
    } finally {
      issuer.down = false;
    }
    validator.close();
  });

  it('an issuer that is down at start: 503 at once during the cooldown, then recovers', async () => {
    const clock = new Clock();
    issuer.down = true;
    const validator = await validatorFor(issuer, clock);
    await validator.warm(); // logged, not thrown
    const token = await issuer.mint(issuer.claims(AUDIENCE));
    const first = await refusal((async () => validator.verify(token))());
    assert.equal(first.code, 'temporarily_unavailable');
    issuer.down = false;
    const requests = issuer.discoveryRequests;
    const second = await refusal((async () => validator.verify(token))());
    assert.equal(second.code, 'temporarily_unavailable');
    assert.equal(issuer.discoveryRequests, requests, 'no new attempt within the cooldown');
    clock.advance(30);
    assert.equal((await validator.verify(token)).subject, 'user-1');
    validator.close();
  });
});

describe('validator: discovery and options', () => {
  it('falls back to RFC 8414 metadata when there is no OpenID discovery document', async () => {
    const issuer = await KeyIssuer.start({ discovery: 'oauth2' });
    await issuer.addKey('ES256');
    const validator = await validatorFor(issuer, new Clock());
    assert.equal((await validator.verify(await issuer.mint(issuer.claims(AUDIENCE)))).subject, 'user-1');
    validator.close();
    await issuer.close();
  });

  it('refuses a discovery document that names another issuer, or a jwks_uri on a private or plain-http host', async () => {
    const payload = (iss: string): JWTPayload => ({ iss, aud: AUDIENCE, sub: 'u', exp: Math.floor(Date.now() / 1000) + 60 });
    const cases: [Parameters<typeof KeyIssuer.start>[0], RegExp][] = [
      [{ documentIssuer: () => 'https://evil.example.com' }, /names issuer "https:\/\/evil.example.com"/],
      [{ extraMetadata: { jwks_uri: 'https://10.0.0.1/jwks' } }, /10\.0\.0\.1 is a private/],
      [{ extraMetadata: { jwks_uri: 'https://169.254.169.254/latest/meta-data' } }, /169\.254\.169\.254 is a private/],
      [{ extraMetadata: { jwks_uri: 'http://keys.example.com/jwks' } }, /must use https/],
    ];
    for (const [options, detail] of cases) {
      const issuer = await KeyIssuer.start(options);
      const key = await issuer.addKey('ES256');
      const validator = await validatorFor(issuer, new Clock());
      const err = await refusal((async () => validator.verify(await issuer.mint(payload(issuer.url), key)))());
      assert.equal(err.code, 'temporarily_unavailable');
      assert.match(err.detail ?? '', detail);
      validator.close();
      await issuer.close();
    }
  });

  it('checks its options at creation, with messages that name the problem', async () => {
    const bad: [Partial<TokenValidatorOptions>, RegExp][] = [
      [{ issuer: 'not a url' }, /issuer must be an absolute https URL/],
      [{ issuer: 'ftp://id.example.com' }, /issuer must be an absolute https URL/],
      [{ issuer: 'http://id.example.com' }, /must use https: plain http is allowed only for loopback/],
      [{ issuer: 'https://id.example.com?x=1' }, /query or a fragment/],
      [{ audience: '' }, /audience is required/],
      [{ clientSecret: 's3cret' }, /clientSecret is set without clientId/],
    ];
    for (const [options, message] of bad) {
      await assert.rejects(createTokenValidator({ issuer: 'https://id.example.com', audience: AUDIENCE, ...options }, log), message);
    }
    for (const issuer of ['http://localhost:8080', 'http://127.0.0.5', 'http://[::1]:9000/realms/x', 'https://id.example.com/tenant']) {
      (await createTokenValidator({ issuer, audience: AUDIENCE }, log)).close();
    }
  });
});
