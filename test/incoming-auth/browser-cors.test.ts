/**
 * A browser-based MCP client on another origin: it can read the protected resource metadata
 * (a public document) from any origin, and an allowed origin can read the 401 challenge that
 * tells it where to authenticate.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { INITIALIZE, startTestGateway } from '../helpers/gateway.ts';
import { inlineOidcYaml } from './helpers/gateway.ts';
import { KeyIssuer } from './helpers/key-issuer.ts';

const RESOURCE = 'http://127.0.0.1:4483/mcp';

describe('oidc gateway: browser clients (CORS)', () => {
  let issuer: KeyIssuer;
  let backend: SdkServer;
  let gateway: RunningVmcp;

  before(async () => {
    issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
    backend = await startSdkServer({ name: 'alpha' });
    gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: backend.url }],
      incomingAuth: inlineOidcYaml({ issuer: issuer.url, audience: RESOURCE, resourceUrl: RESOURCE }),
      spec: '  server: {allowedOrigins: ["https://app.example.com"]}',
    });
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
    await issuer.close();
  });

  it('serves the protected resource metadata to any web origin', async () => {
    const res = await fetch(new URL('/.well-known/oauth-protected-resource/mcp', gateway.url), { headers: { origin: 'https://somewhere.example' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    assert.equal(((await res.json()) as { resource: string }).resource, RESOURCE);
  });

  it('still refuses a Host that is not the gateway, even for public documents', async () => {
    const url = new URL('/.well-known/oauth-protected-resource/mcp', gateway.url);
    const res = await new Promise<number>((resolve, reject) => {
      import('node:http').then(({ request }) => {
        const req = request(url, { headers: { host: 'rebound.example' } }, (r) => {
          r.resume();
          resolve(r.statusCode!);
        });
        req.on('error', reject);
        req.end();
      }, reject);
    });
    assert.equal(res, 403);
  });

  it('lets an allowed origin read the 401 challenge', async () => {
    const res = await fetch(gateway.url, {
      method: 'POST',
      body: INITIALIZE,
      headers: { origin: 'https://app.example.com', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('access-control-allow-origin'), 'https://app.example.com');
    assert.match(res.headers.get('access-control-expose-headers') ?? '', /www-authenticate/);
    assert.match(res.headers.get('www-authenticate') ?? '', /resource_metadata=/);
  });

  it('refuses the MCP endpoint to an origin that is not allowed', async () => {
    const res = await fetch(gateway.url, {
      method: 'POST',
      body: INITIALIZE,
      headers: { origin: 'https://evil.example', 'content-type': 'application/json' },
    });
    assert.equal(res.status, 403);
    assert.equal(res.headers.get('access-control-allow-origin'), null);
  });
});
