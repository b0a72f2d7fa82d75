/**
 * The embedded authorization server's own endpoints, on the gateway's port and origin: metadata
 * (RFC 8414, OpenID discovery), JWKS, dynamic client registration (RFC 7591), and what the
 * authorization endpoint refuses before anyone logs in (PKCE, redirect URIs, clients, resources).
 * Real parts: oidc-provider behind the gateway's bridge, reached over real sockets.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ProviderBridge } from '../../plugins/auth-server/bridge.ts';
import { rawExchange, rawRequestBytes } from '../helpers/raw-http.ts';
import { startAuthGateway, type AuthGateway } from './helpers/setup.ts';

const REDIRECT = 'http://127.0.0.1:7777/callback';
const VERIFIER = 'a'.repeat(43);
const CHALLENGE = 'ZtNPunH49FD35FWYhT5Tv8I7vRKQJ8uxMaL0_9eHjNA'; // base64url(sha256(VERIFIER))

describe('embedded authorization server: endpoints', () => {
  let setup: AuthGateway;
  let issuer: string;

  before(async () => {
    setup = await startAuthGateway();
    issuer = setup.issuer;
  });
  after(() => setup.close());

  async function register(body: Record<string, unknown>): Promise<Response> {
    return fetch(`${issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  }

  /** One registered client for the tests that need one (registrations are rate-limited per address). */
  let registered: Promise<string> | null = null;
  function client(): Promise<string> {
    registered ??= (async () => {
      const res = await register({ redirect_uris: [REDIRECT], client_name: 'test client' });
      assert.equal(res.status, 201, await res.clone().text());
      return ((await res.json()) as { client_id: string }).client_id;
    })();
    return registered;
  }

  function authorize(params: Record<string, string>): Promise<Response> {
    return fetch(`${issuer}/oauth/authorize?${new URLSearchParams(params)}`, { redirect: 'manual' });
  }

  it('publishes its metadata at both well-known names, with the issuer\'s endpoints', async () => {
    for (const name of ['oauth-authorization-server', 'openid-configuration']) {
      const res = await fetch(`${issuer}/.well-known/${name}`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('access-control-allow-origin'), '*');
      const doc = (await res.json()) as Record<string, unknown>;
      assert.equal(doc.issuer, issuer);
      assert.equal(doc.authorization_endpoint, `${issuer}/oauth/authorize`);
      assert.equal(doc.token_endpoint, `${issuer}/oauth/token`);
      assert.equal(doc.registration_endpoint, `${issuer}/oauth/register`);
      assert.equal(doc.jwks_uri, `${issuer}/.well-known/jwks.json`);
      assert.deepEqual(doc.code_challenge_methods_supported, ['S256']);
      assert.deepEqual(doc.response_types_supported, ['code'], 'no implicit or hybrid flows');
      assert.equal(doc.dpop_signing_alg_values_supported, undefined, 'no DPoP: incoming auth checks bearer tokens');
      assert.equal(doc.pushed_authorization_request_endpoint, undefined);
      assert.ok((doc.token_endpoint_auth_methods_supported as string[]).includes('none'));
    }
  });

  it('publishes the public half of its signing key only', async () => {
    const jwks = (await (await fetch(`${issuer}/.well-known/jwks.json`)).json()) as { keys: Record<string, unknown>[] };
    assert.equal(jwks.keys.length, 1);
    assert.equal(jwks.keys[0]!.alg, 'ES256');
    assert.equal(typeof jwks.keys[0]!.kid, 'string');
    assert.equal(jwks.keys[0]!.d, undefined, 'no private part');
  });

  it('answers a browser-based client on another origin (MCP Inspector): preflights and CORS headers on metadata, JWKS, registration and token', async () => {
    const origin = 'http://localhost:6274';
    const preflight = (path: string, method: string, headers: string) =>
      fetch(`${issuer}${path}`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers } });
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration', '/.well-known/jwks.json']) {
      const res = await preflight(path, 'GET', 'mcp-protocol-version');
      assert.equal(res.status, 204, path);
      assert.equal(res.headers.get('access-control-allow-origin'), '*', path);
      assert.match(res.headers.get('access-control-allow-headers') ?? '', /mcp-protocol-version/, path);
      const doc = await fetch(`${issuer}${path}`, { headers: { origin, 'mcp-protocol-version': '2025-11-25' } });
      assert.equal(doc.headers.get('access-control-allow-origin'), '*', path);
    }
    const registration = await preflight('/oauth/register', 'POST', 'content-type');
    assert.equal(registration.status, 204);
    assert.equal(registration.headers.get('access-control-allow-origin'), '*');
    assert.match(registration.headers.get('access-control-allow-methods') ?? '', /POST/);
    assert.match(registration.headers.get('access-control-allow-headers') ?? '', /content-type/);
    const registered = await fetch(`${issuer}/oauth/register`, { method: 'POST', headers: { origin, 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [`${origin}/oauth/callback`], client_name: 'MCP Inspector' }) });
    assert.equal(registered.status, 201, await registered.clone().text());
    assert.equal(registered.headers.get('access-control-allow-origin'), '*', 'the browser may read its client id');
    const token = await preflight('/oauth/token', 'POST', 'content-type');
    assert.equal(token.status, 204);
    assert.equal(token.headers.get('access-control-allow-origin'), origin);
  });

  it('registers a client that names the endpoint\'s scope (MCP\'s scope selection), and refuses a scope it does not issue', async () => {
    const ok = await register({ redirect_uris: [REDIRECT], scope: 'mcp' });
    assert.equal(ok.status, 201, await ok.clone().text());
    const registered = (await ok.json()) as { client_id: string; scope: string };
    // It may ask for openid and offline_access too: clients take the scope to register with from the
    // resource metadata but the one to authorize with from this server's (MCP Inspector 0.15 does).
    assert.deepEqual(registered.scope.split(' ').sort(), ['mcp', 'offline_access', 'openid']);
    const asked = await authorize({ client_id: registered.client_id, response_type: 'code', redirect_uri: REDIRECT, code_challenge: CHALLENGE, code_challenge_method: 'S256', scope: 'openid offline_access mcp' });
    assert.equal(asked.status, 303);
    assert.doesNotMatch(asked.headers.get('location') ?? '', /error=/, 'no invalid_scope');
    const empty = await register({ redirect_uris: [REDIRECT], scope: '' });
    assert.equal(empty.status, 201, 'an empty scope (MCP Inspector 2.x when nothing names one) is dropped, not refused');
    const bogus = await register({ redirect_uris: [REDIRECT], scope: 'admin' });
    assert.equal(bogus.status, 400);
    assert.equal(((await bogus.json()) as { error: string }).error, 'invalid_client_metadata');
  });

  it('warns at start that its keys and secrets are this process\'s own', () => {
    assert.ok(setup.log.lines().some((line) => /a restart invalidates every token/.test(String(line.msg))));
  });

  it('registers a public client (RFC 7591): no secret, PKCE from then on', async () => {
    const res = await register({ redirect_uris: [REDIRECT], client_name: 'inspector' });
    assert.equal(res.status, 201);
    const body = (await res.json()) as Record<string, unknown>;
    assert.equal(typeof body.client_id, 'string');
    assert.equal(body.token_endpoint_auth_method, 'none');
    assert.equal(body.client_secret, undefined);
  });

  it('refuses a registration body past its size limit (413) and a malformed one (400)', async () => {
    const big = await register({ redirect_uris: [REDIRECT], client_name: 'x'.repeat(70 * 1024) });
    assert.equal(big.status, 413);
    const malformed = await fetch(`${issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"redirect_uris": [' });
    assert.equal(malformed.status, 400);
  });

  it('starts a login for a registered client with S256 PKCE and the gateway as resource', async () => {
    const clientId = await client();
    const res = await authorize({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: CHALLENGE, code_challenge_method: 'S256', resource: `${issuer}/mcp`, state: 's1' });
    assert.equal(res.status, 303);
    assert.match(res.headers.get('location') ?? '', /^\/oauth\/interaction\/[\w-]+$/);
  });

  for (const [what, params, error] of [
    ['without PKCE', { code_challenge: undefined, code_challenge_method: undefined }, 'invalid_request'],
    ['with plain PKCE', { code_challenge: VERIFIER, code_challenge_method: 'plain' }, 'invalid_request'],
    ['for a resource the gateway does not serve', { resource: 'https://elsewhere.example/mcp' }, 'invalid_target'],
  ] as const) {
    it(`refuses an authorization ${what}: the client hears ${error} at its redirect URI`, async () => {
      const clientId = await client();
      const query: Record<string, string> = { client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: CHALLENGE, code_challenge_method: 'S256', state: 's2' };
      for (const [key, value] of Object.entries(params)) {
        if (value === undefined) delete query[key];
        else query[key] = value;
      }
      const res = await authorize(query);
      assert.equal(res.status, 303);
      assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
      const location = new URL(res.headers.get('location') ?? '');
      assert.equal(location.origin + location.pathname, REDIRECT);
      assert.equal(location.searchParams.get('error'), error);
      assert.equal(location.searchParams.get('state'), 's2');
    });
  }

  it('refuses an unregistered redirect URI and an unknown client without redirecting anywhere', async () => {
    const clientId = await client();
    const base = { response_type: 'code', code_challenge: CHALLENGE, code_challenge_method: 'S256' };
    for (const query of [
      { ...base, client_id: clientId, redirect_uri: 'http://attacker.example/cb' },
      { ...base, client_id: 'no-such-client', redirect_uri: REDIRECT },
    ]) {
      const res = await authorize(query);
      assert.equal(res.status, 400, JSON.stringify(query));
      assert.equal(res.headers.get('location'), null);
      assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
      const page = await res.text();
      assert.doesNotMatch(page, /attacker\.example|<script/i, 'the page does not echo the request');
    }
  });

  it('refuses a token request with an unknown code (invalid_grant)', async () => {
    const clientId = await client();
    const res = await fetch(`${issuer}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: 'forged', client_id: clientId, redirect_uri: REDIRECT, code_verifier: VERIFIER }),
    });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { error: string }).error, 'invalid_grant');
    // The log says why, not only the status: the OAuth error and its description, with the request's id.
    const line = setup.log.lines().find((l) => l['msg'] === 'a token request was refused' && l['requestId'] === res.headers.get('x-request-id'));
    assert.ok(line !== undefined, 'the refusal is logged');
    assert.equal(line['error'], 'invalid_grant');
    assert.match(String(line['error_description']), /grant request is invalid|not found/);
    assert.equal(line['grant_type'], 'authorization_code');
    assert.equal(line['client_id'], clientId);
    assert.doesNotMatch(setup.log.text(), /forged/, 'never the code itself');
  });

  it('matches a loopback redirect URI on any port (RFC 8252 §7.3), and nothing else loosely', async () => {
    const clientId = await client();
    const base = { client_id: clientId, response_type: 'code', code_challenge: CHALLENGE, code_challenge_method: 'S256', state: 's4' };
    const otherPort = await authorize({ ...base, redirect_uri: 'http://127.0.0.1:61234/callback' });
    assert.equal(otherPort.status, 303);
    assert.match(otherPort.headers.get('location') ?? '', /^\/oauth\/interaction\//);
    for (const redirect_uri of ['http://127.0.0.1:61234/other', 'http://localhost:7777/callback', 'https://127.0.0.1:7777/callback', 'http://127.0.0.1:7777/callback?x=1']) {
      const res = await authorize({ ...base, redirect_uri });
      assert.equal(res.status, 400, redirect_uri);
    }
  });

  it('never sends a code over plain http to another machine, even to a URI the client registered', async () => {
    const res = await register({ redirect_uris: ['http://evil.example/cb'] });
    const clientId = ((await res.json()) as { client_id?: string }).client_id;
    if (clientId === undefined) return; // refused at registration: as good
    const answer = await authorize({ client_id: clientId, response_type: 'code', redirect_uri: 'http://evil.example/cb', code_challenge: CHALLENGE, code_challenge_method: 'S256' });
    assert.equal(answer.status, 400);
    assert.equal(answer.headers.get('location'), null);
  });

  it('leaves the MCP endpoint as it was', async () => {
    const res = await fetch(`${issuer}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
    assert.notEqual(res.status, 404);
  });
});

describe('embedded authorization server: authorizationEndpointBaseUrl', () => {
  let setup: AuthGateway;
  before(async () => {
    setup = await startAuthGateway({ authorizationEndpointBaseUrl: 'https://login.example.com/tenant' });
  });
  after(() => setup.close());

  it('moves only the authorization endpoint in the metadata', async () => {
    const doc = (await (await fetch(`${setup.issuer}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    assert.equal(doc.authorization_endpoint, 'https://login.example.com/tenant/oauth/authorize');
    assert.equal(doc.token_endpoint, `${setup.issuer}/oauth/token`);
    assert.equal(doc.issuer, setup.issuer);
  });
});

describe('embedded authorization server: the loopback bridge', () => {
  it('answers only its own secret, and a hostile header (any bytes, any length) neither passes nor ends the process', async () => {
    let served = 0;
    const bridge = new ProviderBridge('http://127.0.0.1:1', (_req, res) => {
      served++;
      res.end('ok');
    });
    await bridge.start();
    try {
      const port = bridge.internalPort!;
      for (const secret of [undefined, 'x', '\u00e9'.repeat(43), '\u00ff'.repeat(86), 'a'.repeat(43)]) {
        const headers = secret === undefined ? [] : [['x-gatehouse-bridge', secret] as [string, string]];
        // Written as latin1: each character one byte on the wire, as a hostile client would send them.
        const answer = await rawExchange(`http://127.0.0.1:${port}/`, Buffer.from(rawRequestBytes('GET', `http://127.0.0.1:${port}/`, headers), 'latin1'), 500);
        assert.equal(answer.status, 404, JSON.stringify(secret));
      }
      assert.equal(served, 0);
    } finally {
      await bridge.stop();
    }
  });
});
