/**
 * The whole login through the embedded authorization server, headless, against real identity
 * providers: a client registers, authorizes with PKCE and the gateway as resource, the browser
 * goes through `corp` (oidc) and then `github` (oauth2), and the client's code becomes a JWT
 * for the gateway (its sub from corp, its tsid keying both providers' tokens) and a rotating
 * refresh token. Then what must fail: a replayed code or refresh token, a wrong verifier, a
 * tampered or replayed state, a callback in another browser, a provider refusing mid-chain.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import requestContext from 'oidc-provider/lib/helpers/als.js';
import { Browser } from './helpers/browser.ts';
import { startAuthGateway, USER, type AuthGateway } from './helpers/setup.ts';

const REDIRECT = 'http://127.0.0.1:7777/callback';

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

describe('embedded authorization server: the login through chained providers', () => {
  let setup: AuthGateway;
  let clientId: string;

  before(async () => {
    setup = await startAuthGateway({ chained: true });
    const res = await fetch(`${setup.issuer}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'login test' }),
    });
    clientId = ((await res.json()) as { client_id: string }).client_id;
  });
  after(() => setup.close());

  /** Runs the browser part; returns where it stopped (the client's redirect URI, with code or error). */
  async function login(browser = new Browser(), challenge = pkce().challenge, state = 'st-1'): Promise<URL> {
    const query = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: setup.resource, scope: 'openid mcp offline_access', state });
    const visit = await browser.visit(`${setup.issuer}/oauth/authorize?${query}`, (url) => url.href.startsWith(REDIRECT));
    assert.ok(visit.url.href.startsWith(REDIRECT), `stopped at ${visit.url.href} (${visit.status}): ${visit.body.slice(0, 300)}\n${visit.trail.join('\n')}`);
    return visit.url;
  }

  async function token(form: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${setup.issuer}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ client_id: clientId, ...form }) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  it('logs in through corp then github, and issues a JWT for the gateway and a refresh token', async () => {
    const { verifier, challenge } = pkce();
    const before = { corp: setup.corp.logins, github: setup.github!.logins };
    const back = await login(new Browser(), challenge);
    assert.equal(back.searchParams.get('state'), 'st-1');
    const code = back.searchParams.get('code');
    assert.ok(code !== null, back.href);
    assert.equal(setup.corp.logins, before.corp + 1, 'corp logged the user in');
    assert.equal(setup.github!.logins, before.github + 1, 'then github did');

    const issued = await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier });
    assert.equal(issued.status, 200, JSON.stringify(issued.body));
    const jwks = createRemoteJWKSet(new URL(`${setup.issuer}/.well-known/jwks.json`));
    const { payload, protectedHeader } = await jwtVerify(String(issued.body['access_token']), jwks, { issuer: setup.issuer, audience: setup.resource });
    assert.equal(protectedHeader.alg, 'ES256');
    assert.equal(payload.sub, USER.sub, 'the first provider names the user');
    assert.equal(payload['client_id'], clientId);
    assert.equal(typeof payload['tsid'], 'string');
    assert.equal(typeof payload.jti, 'string');
    assert.equal(payload['name'], USER.name);
    assert.equal(payload['email'], USER.email);
    assert.match(String(payload['scope']), /\bmcp\b/);
    assert.equal(typeof issued.body['refresh_token'], 'string');

    // Refresh tokens rotate; the old one replayed is invalid_grant, and revokes the grant.
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token: String(issued.body['refresh_token']) });
    assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
    assert.notEqual(refreshed.body['refresh_token'], issued.body['refresh_token']);
    const renewed = await jwtVerify(String(refreshed.body['access_token']), jwks, { issuer: setup.issuer, audience: setup.resource });
    assert.equal(renewed.payload['tsid'], payload['tsid'], 'the same grant, the same upstream tokens');
    const replayedRefresh = await token({ grant_type: 'refresh_token', refresh_token: String(issued.body['refresh_token']) });
    assert.equal(replayedRefresh.body['error'], 'invalid_grant');
    const afterReplay = await token({ grant_type: 'refresh_token', refresh_token: String(refreshed.body['refresh_token']) });
    assert.equal(afterReplay.body['error'], 'invalid_grant', 'the replay revoked the grant: its current refresh token too');
  });

  it('leaves no async hooks running once the provider has answered (they would cost every MCP request)', async () => {
    // The provider keeps its request context in an AsyncLocalStorage; a live one makes Node 20
    // run async hooks for every promise of the process. Where Node has no such switch (its
    // storage built on AsyncContextFrame), there is nothing to check.
    const state = requestContext as unknown as { enabled?: boolean };
    if (state.enabled === undefined) return;
    const { verifier, challenge } = pkce();
    const code = (await login(new Browser(), challenge)).searchParams.get('code')!;
    // A token request reaches only the gateway's provider (the upstream ones, in this process too, are done).
    const [first, second] = await Promise.all([
      token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier }),
      token({ grant_type: 'client_credentials' }),
    ]);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(second.status, 400, 'a refused request ends too');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(state.enabled, false, 'the request context is disabled when no provider request is under way');
  });

  it('a replayed code is invalid_grant, and revokes what the first exchange issued', async () => {
    const { verifier, challenge } = pkce();
    const code = (await login(new Browser(), challenge)).searchParams.get('code')!;
    const issued = await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier });
    assert.equal(issued.status, 200);
    const replay = await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier });
    assert.equal(replay.status, 400);
    assert.equal(replay.body['error'], 'invalid_grant');
    const refresh = await token({ grant_type: 'refresh_token', refresh_token: String(issued.body['refresh_token']) });
    assert.equal(refresh.body['error'], 'invalid_grant');
  });

  it('refuses a code with the wrong PKCE verifier', async () => {
    const back = await login();
    const res = await token({ grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, code_verifier: pkce().verifier });
    assert.equal(res.status, 400);
    assert.equal(res.body['error'], 'invalid_grant');
  });

  it('a provider refusing mid-chain: the client hears access_denied and gets no code', async () => {
    setup.github!.refuse = true;
    try {
      const back = await login();
      assert.equal(back.searchParams.get('error'), 'access_denied');
      assert.equal(back.searchParams.get('code'), null);
    } finally {
      setup.github!.refuse = false;
    }
  });

  it('a callback with a tampered or replayed state is refused with a page of the gateway\'s own', async () => {
    const browser = new Browser();
    const { challenge } = pkce();
    const query = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: setup.resource, state: 'st-2' });
    // Stop where corp sends the browser back to the gateway, and keep that callback URL.
    const toCallback = await browser.visit(`${setup.issuer}/oauth/authorize?${query}`, (url) => url.href.startsWith(`${setup.issuer}/oauth/callback`));
    const callback = toCallback.url;
    const tampered = new URL(callback);
    tampered.searchParams.set('state', 'forged-state');
    const forged = await browser.visit(tampered.href, () => false);
    assert.equal(forged.status, 400);
    assert.match(forged.body, /not valid/);
    assert.doesNotMatch(forged.body, /forged-state/, 'the page echoes nothing');
    // The real callback once: it goes on (to github); a second time: refused.
    const first = await browser.visit(callback.href, (url) => url.href.startsWith(REDIRECT));
    assert.ok(first.url.href.startsWith(REDIRECT), first.trail.join('\n'));
    const again = await browser.visit(callback.href, () => false);
    assert.equal(again.status, 400);
  });

  it('asks the user, after the login and in its browser: the page names the client, the user and where the code goes, and cannot be framed', async () => {
    const evil = await fetch(`${setup.issuer}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      // A right-to-left override and a zero-width space, to make the name read as something else.
      body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:6666/steal'], client_name: '<b>Totally\u200b Legit</b> \u202Egpj.exe' }),
    });
    const evilId = ((await evil.json()) as { client_id: string }).client_id;
    const query = new URLSearchParams({ client_id: evilId, response_type: 'code', redirect_uri: 'http://127.0.0.1:6666/steal', code_challenge: pkce().challenge, code_challenge_method: 'S256' });
    const logins = setup.corp.logins;
    const visit = await new Browser().visit(`${setup.issuer}/oauth/authorize?${query}`, () => false, { consent: 'none' });
    assert.equal(visit.status, 200);
    assert.match(visit.body, /&lt;b&gt;Totally Legit&lt;\/b&gt; gpj\.exe/, 'the client-chosen name, escaped, without its invisible characters');
    assert.doesNotMatch(visit.body, /[\u202a-\u202e\u2066-\u2069\u200b]/);
    assert.match(visit.body, /127\.0\.0\.1:6666/, 'where the code would go');
    assert.match(visit.body, /Alice Example/, 'as whom');
    assert.equal(setup.corp.logins, logins + 1, 'the login came first');
    assert.ok(!visit.trail.some((url) => url.startsWith('http://127.0.0.1:6666')), 'no code went anywhere');
    assert.equal(visit.headers.get('x-frame-options'), 'DENY');
    assert.match(visit.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
  });

  it('the user denies: the client hears access_denied and no code', async () => {
    const query = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 'st-d' });
    const visit = await new Browser().visit(`${setup.issuer}/oauth/authorize?${query}`, (url) => url.href.startsWith(REDIRECT), { consent: 'deny' });
    assert.equal(visit.url.searchParams.get('error'), 'access_denied');
    assert.equal(visit.url.searchParams.get('code'), null);
  });

  it('a consent answer without the page\'s token, or from another site, is refused', async () => {
    const browser = new Browser();
    const query = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256' });
    const atPage = await browser.visit(`${setup.issuer}/oauth/authorize?${query}`, () => false, { consent: 'none' });
    const action = /action="([^"]+)"/.exec(atPage.body)![1]!;
    // In the user's browser (its cookies): a form another site posts, then one without the
    // page's token, then one with a wrong token.
    for (const [origin, form] of [
      ['http://attacker.example', { decision: 'allow' }],
      [setup.issuer, { decision: 'allow' }],
      [setup.issuer, { decision: 'allow', token: 'guessed' }],
    ] as const) {
      const res = await browser.post(new URL(action, setup.issuer), form, origin);
      assert.equal(res.status, 403, `${origin} ${JSON.stringify(form)}`);
      assert.equal(res.headers.get('location'), null);
    }
  });

  it('asks again on every authorization: a second one in the same browser is not handed a code silently', async () => {
    const browser = new Browser();
    await login(browser);
    const query = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256' });
    const again = await browser.visit(`${setup.issuer}/oauth/authorize?${query}`, (url) => url.href.startsWith(REDIRECT), { consent: 'none' });
    assert.equal(again.status, 200, again.trail.join('\n'));
    assert.match(again.body, /Allow/);
  });

  it('a callback in another browser (no interaction cookie) does not complete the login', async () => {
    const { challenge } = pkce();
    const query = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: setup.resource, state: 'st-3' });
    const toCallback = await new Browser().visit(`${setup.issuer}/oauth/authorize?${query}`, (url) => url.href.startsWith(`${setup.issuer}/oauth/callback`));
    const elsewhere = await new Browser().visit(toCallback.url.href, (url) => url.href.startsWith(REDIRECT));
    assert.equal(elsewhere.status, 400);
    assert.ok(!elsewhere.url.href.startsWith(REDIRECT));
  });
});
