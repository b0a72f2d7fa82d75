/**
 * The client's credentials are for the gateway: in aggregated mode as in transparent mode
 * (test/gateway/transparent.test.ts), no request the gateway makes to a backend — initialize,
 * lists, routed calls, the answer to a backend's sampling request, notifications, the GET
 * streams, DELETE — carries the client's Authorization, Cookie or Proxy-Authorization.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { connectClient, textOf } from '../fixtures/client.ts';
import type { SdkServer } from '../fixtures/sdk-server.ts';
import { startOidcGateway, type OidcGateway } from '../incoming-auth/helpers/oidc-gateway.ts';

const CREDENTIALS = ['authorization', 'cookie', 'proxy-authorization'];

describe('aggregated mode: the client\'s credentials never reach a backend', () => {
  let oidc: OidcGateway;
  before(async () => {
    oidc = await startOidcGateway({ backends: [{ name: 'alpha' }, { name: 'beta', jsonResponse: true }] });
  });
  after(() => oidc.stop());

  it('holds for every kind of exchange of a session', async () => {
    const [alpha, beta] = oidc.backends as [SdkServer, SdkServer];
    const seen = { alpha: alpha.received.length, beta: beta.received.length };
    const c = await connectClient(oidc.gateway.url, {
      headers: { authorization: await oidc.bearer(), cookie: 'session=client-secret', 'proxy-authorization': 'Basic cHJveHk6c2VjcmV0' },
      capabilities: { sampling: true },
    });
    try {
      await c.client.listTools();
      await c.client.listResources();
      const echoed = (await c.client.callTool({ name: 'beta_echo', arguments: { text: 'hi' } })) as CallToolResult;
      assert.equal(textOf(echoed), 'beta: hi');
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
