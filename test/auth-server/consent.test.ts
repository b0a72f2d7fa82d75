/**
 * The consent page (plugins/auth-server/consent-page.ts), reached after a real login through
 * the upstream provider: it says where the code really goes (for a custom-scheme redirect URI
 * the scheme and the whole URI, not the "host" after it), names the MCP server and the scopes,
 * is readable on a phone and makes Allow and Deny distinct; a reload shows it again, in the
 * login's browser only, until it is answered.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Browser } from './helpers/browser.ts';
import { startAuthGateway, type AuthGateway } from './helpers/setup.ts';

const CUSTOM = 'web+mcpclient://claude.ai/callback';
const LOOPBACK = 'http://127.0.0.1:7781/callback';

function challenge(): string {
  return createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
}

describe('embedded authorization server: the consent page', () => {
  let setup: AuthGateway;
  let customClient: string;
  let loopbackClient: string;

  before(async () => {
    setup = await startAuthGateway({ displayName: 'Acme Docs' });
    const register = async (body: Record<string, unknown>): Promise<string> => {
      const res = await fetch(`${setup.issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      assert.equal(res.status, 201, await res.clone().text());
      return ((await res.json()) as { client_id: string }).client_id;
    };
    customClient = await register({ redirect_uris: [CUSTOM], client_name: 'Claude', application_type: 'native' });
    loopbackClient = await register({ redirect_uris: [LOOPBACK], client_name: 'Inspector' });
  });
  after(() => setup.close());

  function authorize(client: string, redirect: string, scope = 'openid mcp offline_access'): string {
    return `${setup.issuer}/oauth/authorize?${new URLSearchParams({ client_id: client, response_type: 'code', redirect_uri: redirect, code_challenge: challenge(), code_challenge_method: 'S256', scope })}`;
  }

  it('for a custom-scheme redirect URI, shows the scheme and the whole URI, not the name after the scheme as a host', async () => {
    const visit = await new Browser().visit(authorize(customClient, CUSTOM), () => false, { consent: 'none' });
    assert.equal(visit.status, 200, visit.body);
    assert.match(visit.body, /<strong>web\+mcpclient:<\/strong>/, 'the scheme');
    assert.match(visit.body, /<code>web\+mcpclient:\/\/claude\.ai\/callback<\/code>/, 'the whole URI');
    assert.match(visit.body, /not a web site/);
    assert.doesNotMatch(visit.body, /<strong>claude\.ai<\/strong>/, 'claude.ai is not where the code goes');
  });

  it('names the MCP server and the scopes, is readable on a phone, and makes Allow and Deny distinct', async () => {
    const visit = await new Browser().visit(authorize(loopbackClient, LOOPBACK), () => false, { consent: 'none' });
    assert.equal(visit.status, 200, visit.body);
    assert.match(visit.body, /to use <q>Acme Docs<\/q>/, 'the configured display name');
    for (const scope of ['openid', 'mcp', 'offline_access']) assert.match(visit.body, new RegExp(`<code>${scope}</code>`), scope);
    assert.match(visit.body, /<meta name="viewport" content="width=device-width, initial-scale=1">/);
    assert.match(visit.body, /<strong>127\.0\.0\.1:7781<\/strong> \(<code>http:\/\/127\.0\.0\.1:7781\/callback<\/code>\)/);
    const allow = /<button name="decision" value="allow" class="(\w+)">/.exec(visit.body)?.[1];
    const deny = /<button name="decision" value="deny" class="(\w+)">/.exec(visit.body)?.[1];
    assert.ok(allow !== undefined && deny !== undefined && allow !== deny, 'each button has a class of its own');
    const style = (name: string): string => new RegExp(`\\.${name}\\{([^}]*)\\}`).exec(visit.body)?.[1] ?? '';
    assert.match(style(allow), /background:#1a7f37/);
    assert.match(style(deny), /background:#fff/);
  });

  it('names the resource URL when no display name is configured', async () => {
    const plain = await startAuthGateway();
    try {
      const reg = await fetch(`${plain.issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [LOOPBACK] }) });
      const client = ((await reg.json()) as { client_id: string }).client_id;
      const query = new URLSearchParams({ client_id: client, response_type: 'code', redirect_uri: LOOPBACK, code_challenge: challenge(), code_challenge_method: 'S256' });
      const visit = await new Browser().visit(`${plain.issuer}/oauth/authorize?${query}`, () => false, { consent: 'none' });
      assert.match(visit.body, new RegExp(`to use <q>${plain.resource.replaceAll('.', '\\.')}</q>`));
    } finally {
      await plain.close();
    }
  });

  it('a reload shows the page again (not "sign-in link is not valid"), the answer still works, and once answered the page is gone', async () => {
    const browser = new Browser();
    const first = await browser.visit(authorize(loopbackClient, LOOPBACK), () => false, { consent: 'none' });
    assert.equal(first.status, 200, first.body);
    assert.match(first.url.pathname, /^\/oauth\/interaction\/[\w-]+\/consent$/, 'the page has a URL of its own');
    const reloaded = await browser.visit(first.url.href, () => false, { consent: 'none' });
    assert.equal(reloaded.status, 200, reloaded.body);
    assert.doesNotMatch(reloaded.body, /not valid/);
    const token = (body: string): string | undefined => /name="token" value="([^"]+)"/.exec(body)?.[1];
    assert.equal(token(reloaded.body), token(first.body));
    // Elsewhere (no interaction cookie) the page is not shown, nor its token.
    const elsewhere = await new Browser().visit(first.url.href, () => false, { consent: 'none' });
    assert.equal(elsewhere.status, 400);
    assert.equal(token(elsewhere.body), undefined);
    const answered = await browser.visit(first.url.href, (url) => url.href.startsWith(LOOPBACK));
    assert.ok(answered.url.searchParams.get('code') !== null, answered.trail.join('\n'));
    const after = await browser.visit(first.url.href, () => false, { consent: 'none' });
    assert.notEqual(after.status, 200);
    assert.equal(token(after.body), undefined, 'an answered consent is not offered again');
  });
});
