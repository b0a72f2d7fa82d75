/**
 * The embedded authorization server's operations in the audit trail (gatehouse:auth:event,
 * published by the plugin, written by the trail): a client registration and a refused one, the
 * sign-in at each upstream provider of the chain (corp, then github) and one a provider refused,
 * the user's consent and a declined one, the code's exchange, a refresh, and refused token
 * requests (a replayed code, a wrong verifier) — each with who, which client, which provider,
 * from where, and how it ended. And none of the credentials the test saw (the codes, tokens,
 * refresh tokens, the upstream providers' client secret) appears anywhere in the file.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { Browser } from './helpers/browser.ts';
import { startAuthGateway, USER, type AuthGateway } from './helpers/setup.ts';

const REDIRECT = 'http://127.0.0.1:7777/callback';

type Line = Record<string, unknown>;

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

describe('audit trail: the embedded authorization server', () => {
  let setup: AuthGateway;
  let clientId = '';
  const secrets: string[] = ['corp-secret'];
  let raw = '';
  let lines: Line[] = [];

  async function token(form: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${setup.issuer}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ client_id: clientId, ...form }) });
    const body = (await res.json()) as Record<string, unknown>;
    for (const key of ['access_token', 'refresh_token', 'id_token']) if (typeof body[key] === 'string') secrets.push(body[key] as string);
    return { status: res.status, body };
  }

  async function authorize(challenge: string, consent: 'allow' | 'deny' = 'allow'): Promise<URL> {
    const query = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: setup.resource, scope: 'openid mcp offline_access', state: 'st-audit' });
    const visit = await new Browser().visit(`${setup.issuer}/oauth/authorize?${query}`, (url) => url.href.startsWith(REDIRECT), { consent });
    const code = visit.url.searchParams.get('code');
    if (code !== null) secrets.push(code);
    return visit.url;
  }

  before(async () => {
    const file = join(await mkdtemp(join(tmpdir(), 'gatehouse-audit-')), 'audit.log');
    setup = await startAuthGateway({ chained: true, config: `audit: {enabled: true, logFile: "${file}", excludeEventTypes: [mcp_tools_list]}` });
    try {
      const registered = await fetch(`${setup.issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'audit test' }) });
      clientId = ((await registered.json()) as { client_id: string }).client_id;
      // A registration refused: a redirect URI that is no URL.
      await fetch(`${setup.issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: ['not a url'] }) });

      const { verifier, challenge } = pkce();
      const code = (await authorize(challenge)).searchParams.get('code')!;
      assert.equal((await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: pkce().verifier })).status, 400, 'a wrong verifier');
      const issued = await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier });
      assert.equal(issued.status, 200, JSON.stringify(issued.body));
      const refresh = String(issued.body['refresh_token']);
      assert.equal((await token({ grant_type: 'refresh_token', refresh_token: refresh })).status, 200);
      assert.equal((await token({ grant_type: 'refresh_token', refresh_token: refresh })).status, 400, 'a replayed refresh token');
      // The user declines; then a provider refuses the sign-in mid-chain.
      await authorize(pkce().challenge, 'deny');
      setup.github!.refuse = true;
      await authorize(pkce().challenge);
      setup.github!.refuse = false;
    } finally {
      await setup.close();
    }
    raw = await readFile(file, 'utf8');
    lines = raw.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Line);
  });

  const of = (type: string): Line[] => lines.filter((l) => l.type === type);

  it('records a registration, and a refused one', () => {
    const [ok, refused] = of('auth_client_registration');
    assert.equal(ok!.outcome, 'success');
    assert.equal(ok!.clientId, clientId);
    assert.equal(ok!.clientAddress, '127.0.0.1');
    assert.match(String(ok!.requestId), /\S/);
    assert.equal(refused!.outcome, 'denied');
    assert.match(String(refused!.errorCode), /^invalid_/);
  });

  it('records the sign-in at each provider of the chain, with the user, and the one a provider refused', () => {
    const logins = of('auth_login');
    const ok = logins.filter((l) => l.outcome === 'success');
    assert.deepEqual(ok.slice(0, 2).map((l) => l.provider), ['corp', 'github']);
    assert.equal(ok[0]!.sub, USER.sub);
    assert.equal(ok[0]!.iss, setup.issuer);
    const refused = logins.filter((l) => l.outcome !== 'success');
    assert.equal(refused.length, 1, JSON.stringify(logins));
    assert.equal(refused[0]!.outcome, 'denied');
    assert.equal(refused[0]!.provider, 'github');
    assert.equal(refused[0]!.errorCode, 'access_denied');
  });

  it('records the consent given and the one declined, with the user and the client', () => {
    const consents = of('auth_consent');
    const given = consents.find((l) => l.outcome === 'success');
    const declined = consents.find((l) => l.outcome === 'denied');
    assert.equal(given!.sub, USER.sub);
    assert.equal(given!.clientId, clientId);
    assert.match(String(given!.scope), /\bmcp\b/);
    assert.equal(declined!.errorCode, 'access_denied');
    assert.equal(declined!.clientId, clientId);
  });

  it('records token requests: refused ones, the exchange and the refresh, with the grant type, user and client', () => {
    const tokens = of('auth_token');
    const refusedCode = tokens.find((l) => l.outcome === 'denied');
    assert.equal(refusedCode!.errorCode, 'invalid_grant');
    assert.equal(refusedCode!.grantType, 'authorization_code');
    assert.equal(refusedCode!.clientId, clientId);
    const ok = tokens.find((l) => l.outcome === 'success')!;
    assert.equal(ok.sub, USER.sub);
    assert.equal(ok.clientId, clientId);
    const refreshes = of('auth_token_refresh');
    assert.deepEqual(refreshes.map((l) => l.outcome), ['success', 'denied']);
    assert.equal(refreshes[0]!.sub, USER.sub);
    assert.equal(refreshes[1]!.errorCode, 'invalid_grant');
  });

  it('no code, token, refresh token or client secret appears anywhere in the file', () => {
    assert.ok(secrets.length >= 3, String(secrets.length));
    for (const secret of secrets) assert.equal(raw.includes(secret), false, `a credential (${secret.slice(0, 6)}…) in the audit file`);
  });
});
