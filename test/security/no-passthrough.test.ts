/**
 * The client's credentials are for the gateway: in aggregated mode as in transparent mode
 * (test/gateway/transparent.test.ts), no request the gateway makes to a backend — initialize,
 * lists, routed calls, the answer to a backend's sampling request, notifications, the GET
 * streams, DELETE — carries the client's Authorization, Cookie or Proxy-Authorization.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { RunningVmcp } from '../../core/vmcp.ts';
import { connectClient } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { inlineOidcYaml } from '../incoming-auth/helpers/gateway.ts';
import { KeyIssuer } from '../incoming-auth/helpers/key-issuer.ts';

const RESOURCE = 'http://127.0.0.1:4483/mcp';
const CREDENTIALS = ['authorization', 'cookie', 'proxy-authorization'];

describe('aggregated mode: the client\'s credentials never reach a backend', () => {
  let issuer: KeyIssuer;
  let alpha: SdkServer;
  let beta: SdkServer;
  let gateway: RunningVmcp;

  before(async () => {
    issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
    alpha = await startSdkServer({ name: 'alpha' });
    beta = await startSdkServer({ name: 'beta', jsonResponse: true });
    gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: alpha.url }, { name: 'beta', url: beta.url }],
      incomingAuth: inlineOidcYaml({ issuer: issuer.url, audience: RESOURCE, resourceUrl: RESOURCE }),
    });
  });
  after(async () => {
    await gateway.stop();
    await Promise.all([alpha.close(), beta.close(), issuer.close()]);
  });

  it('holds for every kind of exchange of a session', async () => {
    const token = await issuer.mint(issuer.claims(RESOURCE));
    const seen = { alpha: alpha.received.length, beta: beta.received.length };
    const c = await connectClient(gateway.url, {
      headers: { authorization: `Bearer ${token}`, cookie: 'session=client-secret', 'proxy-authorization': 'Basic cHJveHk6c2VjcmV0' },
      capabilities: { sampling: true },
    });
    try {
      await c.client.listTools();
      await c.client.listResources();
      const echoed = (await c.client.callTool({ name: 'beta_echo', arguments: { text: 'hi' } })) as CallToolResult;
      assert.equal(echoed.content[0]?.type === 'text' ? echoed.content[0].text : '', 'beta: hi');
      const sampled = (await c.client.callTool({ name: 'alpha_sample', arguments: { prompt: 'p' } })) as CallToolResult;
      assert.ok(sampled.content.length > 0, 'the sampling round trip went back to alpha');
      await c.client.setLoggingLevel('info');
    } finally {
      await c.close();
    }
    const received = [...alpha.received.slice(seen.alpha), ...beta.received.slice(seen.beta)];
    const kinds = new Set(received.map((r) => `${r.method} ${r.rpcMethods.join(',')}`));
    for (const kind of ['POST initialize', 'POST tools/list', 'POST tools/call', 'POST response', 'POST logging/setLevel', 'GET ', 'DELETE ']) {
      assert.ok([...kinds].some((k) => k.startsWith(kind)), `the backends saw a ${kind.trim()} (saw: ${[...kinds].join(' | ')})`);
    }
    for (const request of received) {
      for (const name of CREDENTIALS) assert.equal(request.headers[name], undefined, `${request.method} ${request.rpcMethods.join(',')} carried ${name}`);
    }
  });
});
