/**
 * upstreamInject: the backend gets the access token the user's login obtained from the named
 * upstream provider (the embedded authorization server's store, refreshed when about to expire),
 * never the gateway's own token. When no token can be had (the provider refuses the refresh) the
 * client gets 401 invalid_token with the challenge, to log in again. With subjectProviderName, a
 * token exchange uses that same upstream token as its subject. A real upstream provider
 * (oidc-provider) whose access tokens live 2 s (refreshed after 1 s), a real STS; the backends
 * report what they received.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { freePort } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { ClientFlows, startYamlGateway } from '../auth-server/helpers/flows.ts';
import { USER } from '../auth-server/helpers/setup.ts';
import { exchangeYaml, STS_SECRET, startSts, type TestSts } from './helpers/sts.ts';
import { startUpstreamIdp, type UpstreamIdp } from '../auth-server/helpers/upstream-idp.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

describe('outgoing auth: upstreamInject', () => {
  let idp: UpstreamIdp;
  let backend: SdkServer;
  let docs: SdkServer;
  let sts: TestSts;
  let gateway: RunningVmcp;
  let issuer: string;
  let flows: ClientFlows;

  before(async () => {
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    idp = await startUpstreamIdp({ user: USER, redirectUri: `${issuer}/oauth/callback`, clientSecret: 'corp-secret', accessTokenTtlSeconds: 2 });
    backend = await startSdkServer({ name: 'echo' });
    docs = await startSdkServer({ name: 'docs', tools: ['echo'] });
    // The STS accepts corp's tokens: those corp's userinfo endpoint accepts.
    sts = await startSts({
      verifySubject: async (token) => {
        const me = await fetch(`${idp.issuer}/me`, { headers: { authorization: `Bearer ${token}` } });
        return me.status === 200 ? String(((await me.json()) as { sub: string }).sub) : null;
      },
    });
    gateway = await startYamlGateway({
      port,
      backendUrl: backend.url,
      idpIssuer: idp.issuer,
      persistentKeys: false,
      storage: '{type: memory}',
      upstreamInject: true,
      moreBackends: [{ name: 'docs', url: docs.url, externalAuthConfigRef: 'docs-exchange' }],
      // No subjectProviderName: with the embedded server, the first provider's token is the subject.
      documents: `${STS_SECRET}\n---\n${exchangeYaml('docs-exchange', sts, 'docs-api')}`,
    });
    flows = new ClientFlows(issuer);
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
    await docs.close();
    await sts.close();
    await idp.close();
  });

  /** initialize, initialized and one tools/call with `access`; the last answer. */
  async function callTool(access: string, tool = 'echo_echo', calls = 1): Promise<Response> {
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
    const call = (id: number) =>
      fetch(`${issuer}/mcp`, { method: 'POST', headers: { ...HEADERS, ...auth, ...session }, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: { text: 'hi' } } }) });
    if (calls === 1) return call(2);
    await sleep(1_100); // corp's token of this login is now about to expire
    const answers = await Promise.all(Array.from({ length: calls }, (_, i) => call(2 + i)));
    for (const answer of answers.slice(1)) assert.match(await answer.text(), /hi/);
    return answers[0]!;
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

  it('callers of two logins in turn: each call carries its own login\'s token', async () => {
    const first = await flows.login(await flows.register());
    const second = await flows.login(await flows.register());
    const sentFor = async (access: string): Promise<string[]> => {
      const from = backend.received.length;
      assert.equal((await callTool(access)).status, 200);
      return backend.received.slice(from).map((r) => String(r.headers['authorization']));
    };
    const a = await sentFor(first.access);
    const b = await sentFor(second.access);
    const again = await sentFor(first.access);
    assert.equal(new Set(a).size, 1, JSON.stringify(a));
    assert.equal(new Set(b).size, 1, JSON.stringify(b));
    assert.notEqual(a[0], b[0], 'two logins, two upstream tokens');
    assert.deepEqual(new Set(again), new Set(a), 'the first login\'s token again, not the one injected last');
  });

  it('concurrent calls with a token about to expire: corp is asked for one refresh', async () => {
    const tokens = await flows.login(await flows.register());
    const before = idp.refreshes;
    const answer = await callTool(tokens.access, 'echo_echo', 6);
    assert.match(await answer.text(), /hi/);
    assert.equal(idp.refreshes - before, 1);
  });

  it('tokenExchange with the embedded server: corp\'s token of the login is the subject, the STS\'s token reaches the backend', async () => {
    const tokens = await flows.login(await flows.register());
    const answer = await callTool(tokens.access, 'docs_echo');
    assert.match(await answer.text(), /hi/);
    const request = sts.requests.at(-1);
    assert.ok(request !== undefined);
    const me = await fetch(`${idp.issuer}/me`, { headers: { authorization: `Bearer ${request.subjectToken}` } });
    assert.equal(me.status, 200, 'the subject was corp\'s own token');
    assert.notEqual(request.subjectToken, tokens.access);
    const claims = await sts.verify(String(docs.received.at(-1)?.headers['authorization']).replace(/^Bearer /, ''));
    assert.deepEqual([claims.aud, claims.sub], ['docs-api', USER.sub]);
  });

  it('when corp refuses the refresh: 401 invalid_token with the challenge, nothing reaches the backend', async () => {
    const tokens = await flows.login(await flows.register());
    await sleep(1_100);
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
