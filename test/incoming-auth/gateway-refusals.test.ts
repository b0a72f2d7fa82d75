/**
 * Through a real gateway (YAML config, SDK server behind it), with tokens minted by jose against
 * keys the test controls: every bad request is a 401 whose `error` is in the body and in the
 * `WWW-Authenticate` challenge (with `resource_metadata`), and nothing reaches the backend.
 */
import assert from 'node:assert/strict';
import { Agent } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { exportSPKI, importJWK, SignJWT, type CryptoKey } from 'jose';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { connectClient } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { INITIALIZE, startTestGateway } from '../helpers/gateway.ts';
import { challengeParams, inlineOidcYaml, rawRequest } from './helpers/gateway.ts';
import { b64url, KeyIssuer } from './helpers/key-issuer.ts';

const RESOURCE = 'http://127.0.0.1:4483/mcp';
const PRM_URL = 'http://127.0.0.1:4483/.well-known/oauth-protected-resource/mcp';

describe('oidc gateway: refusals', () => {
  let issuer: KeyIssuer;
  let backend: SdkServer;
  let gateway: RunningVmcp;
  const now = Math.floor(Date.now() / 1000);

  before(async () => {
    issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
    await issuer.addKey('RS256');
    backend = await startSdkServer({ name: 'alpha' });
    gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: backend.url }],
      incomingAuth: inlineOidcYaml({ issuer: issuer.url, audience: RESOURCE, resourceUrl: RESOURCE }),
    });
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
    await issuer.close();
  });

  const post = (headers: Record<string, string | string[]>, query = '') =>
    rawRequest(gateway.url + query, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: INITIALIZE,
    });

  /** What clients' requests brought to the backend (the gateway's own health checks aside). */
  const fromClients = (): number => backend.received.filter((r) => !String(r.headers['user-agent']).startsWith('gatehouse/')).length;

  async function assertRefused(response: Promise<Awaited<ReturnType<typeof post>>>, error: string, description: RegExp): Promise<void> {
    const seen = fromClients();
    const res = await response;
    assert.equal(res.status, 401, res.text);
    const body = res.json as { error: string; error_description: string };
    assert.equal(body.error, error);
    assert.match(body.error_description, description);
    const challenge = challengeParams(res.headers['www-authenticate'] as string | undefined);
    assert.deepEqual(challenge, { realm: RESOURCE, resource_metadata: PRM_URL, error, error_description: body.error_description });
    assert.equal(fromClients(), seen, 'nothing reached the backend');
  }

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const good = () => issuer.mint(issuer.claims(RESOURCE));

  it('missing token → 401 invalid_request', async () => {
    await assertRefused(post({}), 'invalid_request', /requires a bearer token/);
  });

  it('wrong scheme → 401 invalid_request', async () => {
    await assertRefused(post({ authorization: 'Basic dXNlcjpwYXNz' }), 'invalid_request', /Bearer scheme/);
  });

  it('two Authorization headers → 401 invalid_request', async () => {
    const token = await good();
    await assertRefused(post({ authorization: [`Bearer ${token}`, `Bearer ${token}`] }), 'invalid_request', /more than one Authorization/);
  });

  it('token in the query string → 401 invalid_request (also next to a valid header)', async () => {
    const token = await good();
    await assertRefused(post({}, `?access_token=${token}`), 'invalid_request', /query string/);
    await assertRefused(post(bearer(token), `?access_token=${token}`), 'invalid_request', /query string/);
  });

  const invalid: [string, () => Promise<string>, RegExp][] = [
    ['wrong audience', () => issuer.mint(issuer.claims('http://127.0.0.1:9999/other')), /not meant for this resource/],
    ['wrong issuer', () => issuer.mint(issuer.claims(RESOURCE, { iss: 'https://evil.example.com' })), /expected issuer/],
    ['expired', () => issuer.mint(issuer.claims(RESOURCE, { iat: now - 7200, exp: now - 3600 })), /expired/],
    ['not yet valid', () => issuer.mint(issuer.claims(RESOURCE, { nbf: now + 3600 })), /not valid yet/],
    ['alg none', async () => `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(issuer.claims(RESOURCE))}.`, /alg "none"/],
    [
      'HS256 signed with the public key',
      async () => {
        const rsa = issuer.keys[1]!;
        const pem = await exportSPKI((await importJWK(rsa.publicJwk, 'RS256', { extractable: true })) as CryptoKey);
        return new SignJWT(issuer.claims(RESOURCE)).setProtectedHeader({ alg: 'HS256', kid: rsa.kid }).sign(new TextEncoder().encode(pem));
      },
      /symmetric algorithms/,
    ],
    ['unknown kid', async () => issuer.mint(issuer.claims(RESOURCE), await issuer.addKey('ES256', false, 'not-published')), /unknown kid/],
    [
      'tampered payload',
      async () => {
        const [header, , signature] = (await good()).split('.');
        return `${header}.${b64url(issuer.claims(RESOURCE, { sub: 'admin' }))}.${signature}`;
      },
      /signature is invalid/,
    ],
    ['an opaque token without introspection', async () => 'opaque-value', /not a JWT/],
  ];
  for (const [name, mint, description] of invalid) {
    it(`${name} → 401 invalid_token`, async () => {
      await assertRefused(post(bearer(await mint())), 'invalid_token', description);
    });
  }

  it('on one keep-alive connection, a valid token does not let the next, different token through', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const token = await good();
      const [header, , signature] = token.split('.');
      const tampered = `${header}.${b64url(issuer.claims(RESOURCE, { sub: 'admin' }))}.${signature}`;
      const send = (t: string) =>
        rawRequest(gateway.url, { method: 'POST', agent, headers: { ...bearer(t), 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: INITIALIZE });
      const first = await send(token);
      const second = await send(tampered);
      const third = await send(token);
      assert.equal(first.localPort, second.localPort, 'the same connection');
      assert.deepEqual([first.status, second.status, third.status], [200, 401, 200]);
      assert.equal((second.json as { error: string }).error, 'invalid_token');
    } finally {
      agent.destroy();
    }
  });

  it('GET (SSE stream) and DELETE of the MCP endpoint need a token too', async () => {
    for (const method of ['GET', 'DELETE']) {
      const seen = backend.received.length;
      const res = await rawRequest(gateway.url, { method, headers: { accept: 'text/event-stream', 'mcp-session-id': 'x' } });
      assert.equal(res.status, 401, method);
      assert.equal(challengeParams(res.headers['www-authenticate'] as string).error, 'invalid_request');
      assert.equal(backend.received.length, seen);
    }
  });

  it('a valid token reaches the backend, without its Authorization header', async () => {
    const seen = backend.received.length;
    const res = await post(bearer(await good()));
    assert.equal(res.status, 200, res.text);
    const forwarded = backend.received.slice(seen);
    assert.equal(forwarded.length, 1);
    assert.equal(forwarded[0]!.headers.authorization, undefined, 'the client token never reaches a backend');
  });

  it('the SDK client works end to end with a valid token', async () => {
    const c = await connectClient(gateway.url, { headers: bearer(await good()) });
    try {
      assert.equal(c.client.getServerVersion()?.name, 'alpha');
      const result = await c.client.callTool({ name: 'echo', arguments: { text: 'authenticated' } });
      assert.deepEqual(result.content, [{ type: 'text', text: 'alpha: authenticated' }]);
    } finally {
      await c.close();
    }
  });

  it('health endpoints and the metadata documents need no token', async () => {
    const origin = new URL(gateway.url).origin;
    assert.equal((await rawRequest(`${origin}/healthz`)).status, 200);
    assert.equal((await rawRequest(`${origin}/readyz`)).status, 200);
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const res = await rawRequest(origin + path);
      assert.equal(res.status, 200, path);
      assert.deepEqual(res.json, { resource: RESOURCE, authorization_servers: [issuer.url], bearer_methods_supported: ['header'] });
      assert.equal(res.headers['access-control-allow-origin'], '*');
      assert.match(String(res.headers['content-type']), /application\/json/);
      const preflight = await rawRequest(origin + path, { method: 'OPTIONS' });
      assert.equal(preflight.status, 204);
      assert.match(String(preflight.headers['access-control-allow-methods']), /GET/);
    }
  });
});
