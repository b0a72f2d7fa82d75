/**
 * upstreamInject: the backend gets the access token the user's login obtained from the named
 * upstream provider (the embedded authorization server's store, refreshed when about to expire),
 * never the gateway's own token. When no token can be had (the provider refuses the refresh) the
 * client gets 401 invalid_token with the challenge, to log in again. A real upstream provider
 * (oidc-provider) whose access tokens live 10 s; the backend reports what it received.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/virtual-mcp-server.ts';
import { freePort } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { ClientFlows, startYamlGateway } from '../auth-server/helpers/flows.ts';
import { USER } from '../auth-server/helpers/setup.ts';
import { startUpstreamIdp, type UpstreamIdp } from '../auth-server/helpers/upstream-idp.ts';

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

describe('outgoing auth: upstreamInject', () => {
  let idp: UpstreamIdp;
  let backend: SdkServer;
  let gateway: RunningVmcp;
  let issuer: string;
  let flows: ClientFlows;

  before(async () => {
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    idp = await startUpstreamIdp({ user: USER, redirectUri: `${issuer}/oauth/callback`, clientSecret: 'corp-secret', accessTokenTtlSeconds: 10 });
    backend = await startSdkServer({ name: 'echo' });
    gateway = await startYamlGateway({ port, backendUrl: backend.url, idpIssuer: idp.issuer, persistentKeys: false, storage: '{type: memory}', upstreamInject: true });
    flows = new ClientFlows(issuer);
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
    await idp.close();
  });

  /** initialize, initialized and one tools/call with `access`; the last answer. */
  async function callTool(access: string): Promise<Response> {
    const auth = { authorization: `Bearer ${access}` };
    const init = await fetch(`${issuer}/mcp`, {
      method: 'POST',
      headers: { ...HEADERS, ...auth },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    });
    if (init.status !== 200) return init;
    await init.arrayBuffer();
    const session = { 'mcp-session-id': init.headers.get('mcp-session-id') ?? '', 'mcp-protocol-version': '2025-11-25' };
    await (await fetch(`${issuer}/mcp`, { method: 'POST', headers: { ...HEADERS, ...auth, ...session }, body: '{"jsonrpc":"2.0","method":"notifications/initialized"}' })).arrayBuffer();
    return fetch(`${issuer}/mcp`, { method: 'POST', headers: { ...HEADERS, ...auth, ...session }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } }) });
  }

  it('the backend gets corp\'s token of the caller\'s login, good at corp, never the gateway\'s', async () => {
    const tokens = await flows.login(await flows.register());
    const from = backend.received.length;
    const answer = await callTool(tokens.access);
    assert.equal(answer.status, 200, await answer.clone().text());
    assert.match(await answer.text(), /hi/);
    const sent = backend.received.slice(from).map((r) => r.headers['authorization']);
    assert.ok(sent.length >= 3 && sent.every((value) => typeof value === 'string' && value.startsWith('Bearer ')), JSON.stringify(sent));
    const upstream = String(sent[0]).slice('Bearer '.length);
    assert.notEqual(upstream, tokens.access, 'the gateway\'s own token never reaches the backend');
    const me = await fetch(`${idp.issuer}/me`, { headers: { authorization: `Bearer ${String(sent.at(-1)).slice(7)}` } });
    assert.equal(me.status, 200, 'a token corp itself accepts');
  });

  it('when corp refuses the refresh: 401 invalid_token with the challenge, nothing reaches the backend', async () => {
    const tokens = await flows.login(await flows.register());
    idp.refuseRefresh = true;
    try {
      const from = backend.received.length;
      const answer = await callTool(tokens.access);
      assert.equal(answer.status, 401, await answer.clone().text());
      assert.match(answer.headers.get('www-authenticate') ?? '', /invalid_token/);
      assert.match(await answer.text(), /re-authentication required/);
      assert.equal(backend.received.length, from);
    } finally {
      idp.refuseRefresh = false;
    }
  });
});
