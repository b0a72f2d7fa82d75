/**
 * An `oauth2` upstream provider whose token endpoint answers in a shape of its own (a nested
 * object, as some SaaS APIs do), read through `tokenResponseMapping`, and whose user is named by
 * its userInfo endpoint through `fieldMapping`. The provider is a small OAuth 2.0 server of the
 * test's (with PKCE): the login goes through it alone, so it names the user.
 */
import { DEFAULT_AUTH_SERVER_BOUNDS } from '../../core/config/auth-server-limits.ts';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import type { AuthServerConfig } from '../../core/config/vmcp-types.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { authServer, type AuthServerPluginConfig } from '../../plugins/auth-server/auth-server.ts';
import { loadServerKeys } from '../../plugins/auth-server/keys.ts';
import { UpstreamTokenHandle } from '../../plugins/auth-server/upstream-token-access.ts';
import { freePort } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { Browser } from './helpers/browser.ts';

const REDIRECT = 'http://127.0.0.1:7782/callback';

/** The provider: codes bound to their PKCE challenge, a nested token answer, a user endpoint. */
async function startNestedProvider(): Promise<{ url: string; tokenRequests: URLSearchParams[]; close(): Promise<void> }> {
  const codes = new Map<string, string>();
  const tokenRequests: URLSearchParams[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/authorize') {
      const code = randomBytes(8).toString('hex');
      codes.set(code, url.searchParams.get('code_challenge') ?? '');
      const back = new URL(url.searchParams.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      res.writeHead(302, { location: back.href }).end();
      return;
    }
    if (url.pathname === '/user') {
      const ok = req.headers.authorization === 'Bearer gh-access-1';
      res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' }).end(ok ? JSON.stringify({ id: 4242, login: 'octo', mail: 'octo@example.com' }) : '{}');
      return;
    }
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const form = new URLSearchParams(body);
      tokenRequests.push(form);
      const challenge = codes.get(form.get('code') ?? '');
      const verified = challenge !== undefined && createHash('sha256').update(form.get('code_verifier') ?? '').digest('base64url') === challenge;
      if (form.get('grant_type') === 'authorization_code' && verified && form.get('client_secret') === 'gh-secret') {
        codes.delete(form.get('code')!);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, data: { token: 'gh-access-1', expires: 3600, renew: 'gh-refresh-1', granted: ['repo', 'user'] } }));
      } else {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: false }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, tokenRequests, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('embedded authorization server: an oauth2 provider with its own token response shape', () => {
  let provider: Awaited<ReturnType<typeof startNestedProvider>>;
  let backend: SdkServer;
  let gateway: RunningVmcp;
  let issuer: string;
  const upstreamTokens = new UpstreamTokenHandle();

  before(async () => {
    provider = await startNestedProvider();
    backend = await startSdkServer({ name: 'echo' });
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    const settings: AuthServerConfig = {
      issuer,
      displayName: null,
      authorizationEndpointBaseUrl: null,
      signingKeys: [],
      hmacSecrets: [],
      tokenLifespans: { accessTokenMs: 3_600_000, refreshTokenMs: 168 * 3_600_000, authCodeMs: 600_000 },
      ...DEFAULT_AUTH_SERVER_BOUNDS,
      upstreamProviders: [
        {
          name: 'github',
          type: 'oauth2',
          authorizationEndpoint: `${provider.url}/authorize`,
          tokenEndpoint: `${provider.url}/token`,
          clientId: 'gh-app',
          clientSecret: { name: 'gh', key: 'secret', value: 'gh-secret' },
          scopes: ['repo'],
          userInfo: { endpointUrl: `${provider.url}/user`, httpMethod: 'GET', additionalHeaders: { 'x-api-version': '2022-11-28' }, fieldMapping: { subjectFields: ['id'], nameFields: ['name', 'login'], emailFields: ['mail'] } },
          tokenResponseMapping: { accessTokenPath: 'data.token', scopePath: 'data.granted', refreshTokenPath: 'data.renew', expiresInPath: 'data.expires' },
        },
      ],
      storage: { type: 'memory' },
    };
    gateway = await startTestGateway({
      port,
      backends: [{ name: 'echo', url: backend.url }],
      plugins: [{ definition: authServer, config: { authServer: settings, keys: loadServerKeys([], []), resource: `${issuer}/mcp`, scopes: ['mcp'], upstreamTokens } satisfies AuthServerPluginConfig, source: 'test' }],
    });
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
    await provider.close();
  });

  it('logs in through it: the user named by userInfo, its token read from data.token', async () => {
    const reg = await fetch(`${issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT] }) });
    const clientId = ((await reg.json()) as { client_id: string }).client_id;
    const verifier = randomBytes(32).toString('base64url');
    const query = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256' });
    const visit = await new Browser().visit(`${issuer}/oauth/authorize?${query}`, (url) => url.href.startsWith(REDIRECT));
    const code = visit.url.searchParams.get('code');
    assert.ok(code !== null, visit.trail.join('\n'));
    const res = await fetch(`${issuer}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: clientId, redirect_uri: REDIRECT, code_verifier: verifier }),
    });
    const claims = decodeJwt(((await res.json()) as { access_token: string }).access_token);
    assert.equal(claims.sub, '4242', 'subjectFields: id');
    assert.equal(claims['name'], 'octo', 'nameFields: the first present (login)');
    assert.equal(claims['email'], 'octo@example.com');
    assert.equal(await upstreamTokens.get().accessToken(String(claims['tsid']), 'github'), 'gh-access-1');
    const exchange = provider.tokenRequests.find((form) => form.get('grant_type') === 'authorization_code');
    assert.equal(exchange?.get('client_id'), 'gh-app');
    assert.ok((exchange?.get('code_verifier') ?? '').length >= 43, 'PKCE toward the provider too');
  });
});
