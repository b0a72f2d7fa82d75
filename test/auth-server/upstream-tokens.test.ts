/**
 * The upstream tokens a login kept, as a plugin presenting them to a backend reads them: the
 * stored one while fresh; refreshed (once, however many ask at the same time) when it expires
 * within 30 s, or within half its lifetime when that is shorter; a refresh the provider refuses
 * is 401 invalid_token "re-authentication required"; an unknown login likewise. Against a real
 * upstream identity provider whose access tokens live 2 s (so "about to expire" after 1 s).
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import { GatewayError } from '../../core/base/errors.ts';
import { Browser } from './helpers/browser.ts';
import { startAuthGateway, type AuthGateway } from './helpers/setup.ts';

const REDIRECT = 'http://127.0.0.1:7780/callback';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('embedded authorization server: the upstream tokens of a login', () => {
  let setup: AuthGateway;
  let tsid: string;

  let clientId: string;

  /** A login and its code exchanged: the tsid, and a replay of the same code. */
  async function login(): Promise<{ tsid: string; replay: () => Promise<Response> }> {
    const verifier = randomBytes(32).toString('base64url');
    const query = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256' });
    const visit = await new Browser().visit(`${setup.issuer}/oauth/authorize?${query}`, (url) => url.href.startsWith(REDIRECT));
    const exchange = () =>
      fetch(`${setup.issuer}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'authorization_code', code: visit.url.searchParams.get('code')!, client_id: clientId, redirect_uri: REDIRECT, code_verifier: verifier }),
      });
    const res = await exchange();
    return { tsid: String(decodeJwt(((await res.json()) as { access_token: string }).access_token)['tsid']), replay: exchange };
  }

  before(async () => {
    setup = await startAuthGateway({ corpAccessTokenTtlSeconds: 2 });
    const reg = await fetch(`${setup.issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT] }) });
    clientId = ((await reg.json()) as { client_id: string }).client_id;
    tsid = (await login()).tsid;
  });
  after(() => setup.close());

  it('keeps a fresh token, and refreshes one about to expire once, however many ask for it at the same time', async () => {
    const access = setup.upstreamTokens.get();
    let before = setup.corp.refreshes;
    await Promise.all(Array.from({ length: 5 }, () => access.accessToken(tsid, 'corp')));
    assert.equal(setup.corp.refreshes, before, 'fresh for more than half its lifetime: no refresh');
    await sleep(1_100);
    before = setup.corp.refreshes;
    const tokens = await Promise.all(Array.from({ length: 10 }, () => access.accessToken(tsid, 'corp')));
    assert.equal(setup.corp.refreshes, before + 1, 'one refresh at the provider');
    assert.equal(new Set(tokens).size, 1, 'every caller got the same fresh token');
    // The provider's token is good at its userinfo endpoint.
    const me = await fetch(`${setup.corp.issuer}/me`, { headers: { authorization: `Bearer ${tokens[0]}` } });
    assert.equal(me.status, 200);
  });

  it('a refresh the provider refuses: 401 invalid_token, re-authentication required', async () => {
    await sleep(1_100);
    setup.corp.refuseRefresh = true;
    try {
      await assert.rejects(setup.upstreamTokens.get().accessToken(tsid, 'corp'), (err: unknown) => {
        assert.ok(err instanceof GatewayError);
        assert.equal(err.code, 'invalid_token');
        assert.equal(err.status, 401);
        assert.equal(err.description, 'upstream token is no longer valid; re-authentication required');
        return true;
      });
    } finally {
      setup.corp.refuseRefresh = false;
    }
  });

  it('a grant revoked by a replayed code takes its upstream tokens along', async () => {
    setup.corp.refuseRefresh = false;
    const other = await login();
    const access = setup.upstreamTokens.get();
    assert.equal(typeof (await access.accessToken(other.tsid, 'corp')), 'string');
    assert.equal((await other.replay()).status, 400, 'the replay is refused, and revokes the grant');
    await assert.rejects(access.accessToken(other.tsid, 'corp'), (err: unknown) => err instanceof GatewayError && err.status === 401);
  });

  it('a login the server does not know, or a provider it was not through: 401 as well', async () => {
    for (const [id, provider] of [['no-such-grant', 'corp'], [tsid, 'github']] as const) {
      await assert.rejects(setup.upstreamTokens.get().accessToken(id, provider), (err: unknown) => err instanceof GatewayError && err.status === 401);
    }
  });
});
