/**
 * The official MCP SDK client, with its own OAuth support, against a gateway configured as a
 * user would (YAML: incomingAuth oidc inline with the embedded server's issuer, authServerConfig
 * with a real upstream identity provider): 401 → RFC 9728 → RFC 8414 → registration → authorize
 * with PKCE and resource → the login → token → tools/call. Incoming auth checks the tokens with
 * the server's keys in this process (no JWKS fetch).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { freePort } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { captureLog, type CapturedLog } from '../store/helpers/log.ts';
import { HeadlessOAuthProvider } from './helpers/sdk-oauth.ts';
import { USER } from './helpers/setup.ts';
import { startUpstreamIdp, type UpstreamIdp } from './helpers/upstream-idp.ts';

const REDIRECT = 'http://127.0.0.1:7778/oauth/callback';

for (const issuerPath of ['', '/auth']) describe(`embedded authorization server${issuerPath === '' ? '' : ' with an issuer path (' + issuerPath + ')'}: the MCP SDK client logs in and calls a tool`, () => {
  let idp: UpstreamIdp;
  let backend: SdkServer;
  let gateway: RunningVmcp;
  let origin: string;
  let issuer: string;
  let log: CapturedLog;

  before(async () => {
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    issuer = origin + issuerPath;
    idp = await startUpstreamIdp({ user: USER, redirectUri: `${issuer}/oauth/callback`, clientSecret: 'corp-secret' });
    backend = await startSdkServer({ name: 'echo' });
    log = captureLog('info');
    gateway = await startTestGateway({
      port,
      log: log.log,
      backends: [{ name: 'echo', url: backend.url }],
      incomingAuth: `  incomingAuth:\n    type: oidc\n    resourceUrl: "${origin}/mcp"\n    oidcConfig: {type: inline, inline: {issuer: "${issuer}", clientId: vmcp, audience: "${origin}/mcp"}}`,
      spec:
        `  authServerConfig:\n    issuer: "${issuer}"\n    upstreamProviders:\n` +
        `      - {name: corp, type: oidc, oidcConfig: {issuerUrl: "${idp.issuer}", clientId: gatehouse, clientSecretRef: {name: corp, key: secret}, scopes: [openid, profile, email]}}`,
      documents: 'apiVersion: v1\nkind: Secret\nmetadata: {name: corp}\nstringData: {secret: corp-secret}',
    });
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
    await idp.close();
  });

  it('401 → discovery → registration → login → token → tools/call', async () => {
    const provider = new HeadlessOAuthProvider(REDIRECT);
    const url = new URL(`${origin}/mcp`);
    let transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    let client = new Client({ name: 'sdk-oauth-test', version: '1.0.0' });
    await assert.rejects(client.connect(transport), (err: unknown) => err instanceof UnauthorizedError);
    assert.ok(provider.landed !== null, 'the login ran');
    const code = provider.landed.searchParams.get('code');
    assert.ok(code !== null, provider.landed.href + '\n' + log.text());
    await transport.finishAuth(code);
    assert.ok(provider.saved?.access_token !== undefined);
    assert.equal(decodeJwt(provider.saved.access_token).iss, issuer);
    assert.ok(provider.landed.href.startsWith(REDIRECT));

    transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    client = new Client({ name: 'sdk-oauth-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const result = await client.callTool({ name: 'echo', arguments: { text: 'hello through the embedded server' } });
      assert.match(JSON.stringify(result.content), /hello through the embedded server/);
    } finally {
      await client.close();
    }
    assert.ok(!log.text().includes('discovered the token issuer from http'), 'no discovery over the network');
  });

  it('its metadata is where RFC 8414 and OpenID discovery put it for this issuer, every endpoint under the issuer', async () => {
    const inserted = (await (await fetch(`${origin}/.well-known/oauth-authorization-server${issuerPath}`)).json()) as Record<string, string>;
    const appended = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as Record<string, string>;
    for (const doc of [inserted, appended]) {
      assert.equal(doc['issuer'], issuer);
      for (const [endpoint, path] of [['authorization_endpoint', '/oauth/authorize'], ['token_endpoint', '/oauth/token'], ['registration_endpoint', '/oauth/register'], ['jwks_uri', '/.well-known/jwks.json']] as const) {
        assert.equal(doc[endpoint], issuer + path, endpoint);
      }
    }
    const jwks = await fetch(`${issuer}/.well-known/jwks.json`);
    assert.equal(jwks.status, 200);
  });

  it('the MCP endpoint\'s resource metadata (RFC 9728) names the embedded server', async () => {
    const doc = (await (await fetch(`${origin}/.well-known/oauth-protected-resource/mcp`)).json()) as { resource: string; authorization_servers: string[]; scopes_supported: string[] };
    assert.equal(doc.resource, `${origin}/mcp`);
    // The scope the server issues, so that clients register and ask for it (an empty scope is refused at registration).
    assert.deepEqual(doc.scopes_supported, ['mcp']);
    const challenge = await fetch(`${origin}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
    assert.match(challenge.headers.get('www-authenticate') ?? '', /scope="mcp"/);
    assert.deepEqual(doc.authorization_servers, [issuer]);
  });

  it('an unsigned token (alg none) is refused (401 with the challenge)', async () => {
    const res = await fetch(`${origin}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.' },
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    });
    assert.equal(res.status, 401);
    assert.match(res.headers.get('www-authenticate') ?? '', /resource_metadata=/);
  });
});
