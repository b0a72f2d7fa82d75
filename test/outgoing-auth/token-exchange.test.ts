/**
 * Outgoing auth strategies mixed in one aggregated group, against a real STS (oidc-provider with
 * the RFC 8693 grant) and a real OpenID provider for the callers' tokens:
 *
 *   docs   tokenExchange, audience docs-api    wiki   tokenExchange, audience wiki-api (1 s timeout)
 *   keyed  headerInjection X-API-Key           plain  no strategy: no credentials at all
 *
 * What each backend receives is what its strategy says and nothing else: never the caller's
 * token. Exchanged tokens are cached per user and audience for their lifetime; the STS refusing
 * the caller is a 401 the client can act on; the STS down or slow fails only that backend's
 * calls, and nothing of a failure is kept.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { connectClient, type ConnectedClient } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { freePort } from '../fixtures/processes.ts';
import { INITIALIZE, post } from '../helpers/gateway.ts';
import { inlineOidcYaml, startGatewayAt } from '../incoming-auth/helpers/gateway.ts';
import { startOidcProvider, type TestProvider } from '../incoming-auth/helpers/oidc-provider.ts';
import { exchangeYaml, STS_CLIENT, STS_SECRET, startSts, subjectVerifier, type TestSts } from './helpers/sts.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('outgoing auth: strategies mixed in one aggregated group', () => {
  let idp: TestProvider;
  let sts: TestSts;
  const backends: Record<string, SdkServer> = {};
  let gateway: RunningVmcp;
  let resource: string;

  before(async () => {
    idp = await startOidcProvider();
    sts = await startSts({ verifySubject: subjectVerifier(idp) });
    for (const name of ['docs', 'wiki', 'keyed', 'plain']) backends[name] = await startSdkServer({ name, tools: ['echo'] });
    gateway = await startGatewayAt(
      [
        { name: 'docs', url: backends['docs']!.url, externalAuthConfigRef: 'docs-exchange' },
        { name: 'wiki', url: backends['wiki']!.url, externalAuthConfigRef: 'wiki-exchange' },
        { name: 'keyed', url: backends['keyed']!.url, externalAuthConfigRef: 'api-key' },
        { name: 'plain', url: backends['plain']!.url },
      ],
      (resourceUrl) => {
        resource = resourceUrl;
        return inlineOidcYaml({ issuer: idp.issuer, audience: resourceUrl, resourceUrl });
      },
      [
        STS_SECRET,
        exchangeYaml('docs-exchange', sts, 'docs-api'),
        exchangeYaml('wiki-exchange', sts, 'wiki-api', '    timeout: 1s\n'),
        'apiVersion: gatehouse.dev/v1alpha1\nkind: MCPExternalAuthConfig\nmetadata: {name: api-key}\nspec: {type: headerInjection, headerInjection: {headerName: X-API-Key, valueSecretRef: {name: sts, key: key}}}',
      ].join('\n---\n'),
    );
  });
  after(async () => {
    await gateway.stop();
    for (const backend of Object.values(backends)) await backend.close();
    await sts.close();
    await idp.close();
  });

  /** A new caller token (a new subject token string: a new cache key) for `client`. */
  const tokenOf = (client: 'mcp-client' | 'gatehouse' = 'mcp-client') => idp.token(resource, client);
  const exchangesFor = (audience: string) => sts.requests.filter((r) => r.audience === audience).length;
  const lastAuthorization = (name: string) => backends[name]!.received.at(-1)?.headers['authorization'];

  async function connect(token: string): Promise<ConnectedClient> {
    return connectClient(gateway.url, { headers: { authorization: `Bearer ${token}` }, waitForStandaloneStream: false });
  }

  async function echo(c: ConnectedClient, backend: string, text = 'hi'): Promise<{ isError?: boolean; content: { text: string }[] }> {
    return (await c.client.callTool({ name: `${backend}_echo`, arguments: { text } })) as { isError?: boolean; content: { text: string }[] };
  }

  it('each backend gets its own credential: an audience-bound exchanged token, the API key, or nothing; never the caller\'s token', async () => {
    const token = await tokenOf();
    const c = await connect(token);
    try {
      const names = (await c.client.listTools()).tools.map((t) => t.name).sort();
      assert.deepEqual(names, ['docs_echo', 'keyed_echo', 'plain_echo', 'wiki_echo']);
      for (const name of ['docs', 'wiki', 'keyed', 'plain']) assert.match(JSON.stringify(await echo(c, name)), /hi/);

      const docs = await sts.verify(String(lastAuthorization('docs')).replace(/^Bearer /, ''));
      assert.deepEqual([docs.aud, docs.sub, docs['scope']], ['docs-api', 'mcp-client', 'docs-api.read']);
      const wiki = await sts.verify(String(lastAuthorization('wiki')).replace(/^Bearer /, ''));
      assert.equal(wiki.aud, 'wiki-api');
      assert.equal(backends['keyed']!.received.at(-1)?.headers['x-api-key'], 'k-123');
      assert.equal(lastAuthorization('keyed'), undefined);
      assert.equal(lastAuthorization('plain'), undefined);
      assert.equal(backends['plain']!.received.at(-1)?.headers['x-api-key'], undefined);

      // The exchange as RFC 8693 has it, with the gateway's client authenticated by the STS.
      const request = sts.requests.find((r) => r.subjectToken === token && r.audience === 'docs-api');
      assert.deepEqual(request, {
        subjectToken: token,
        subjectTokenType: 'urn:ietf:params:oauth:token-type:access_token',
        requestedTokenType: 'urn:ietf:params:oauth:token-type:access_token',
        audience: 'docs-api',
        scope: 'docs-api.read',
        client: STS_CLIENT.id,
      });
      for (const backend of Object.values(backends)) {
        for (const received of backend.received) assert.ok(!JSON.stringify(received.headers).includes(token), `${backend.name} received the caller's token`);
      }
    } finally {
      await c.close();
    }
  });

  it('one exchange per user and audience, whatever the number of calls; a second user gets an exchange of their own', async () => {
    const first = await tokenOf();
    const before = { docs: exchangesFor('docs-api'), wiki: exchangesFor('wiki-api') };
    const c = await connect(first);
    try {
      for (let i = 0; i < 10; i++) await echo(c, 'docs', `call ${i}`);
      await Promise.all(Array.from({ length: 10 }, (_, i) => echo(c, 'wiki', `parallel ${i}`)));
      assert.deepEqual({ docs: exchangesFor('docs-api') - before.docs, wiki: exchangesFor('wiki-api') - before.wiki }, { docs: 1, wiki: 1 });
    } finally {
      await c.close();
    }
    // The second user: a client-credentials JWT of another client of the same provider.
    const d = await connect(await tokenOf('gatehouse'));
    try {
      await echo(d, 'docs');
      assert.equal(exchangesFor('docs-api') - before.docs, 2, 'a new subject is exchanged anew');
      const claims = await sts.verify(String(lastAuthorization('docs')).replace(/^Bearer /, ''));
      assert.deepEqual([claims.aud, claims.sub], ['docs-api', 'gatehouse'], 'the second user\'s own token');
    } finally {
      await d.close();
    }
  });

  it('a short-lived exchanged token is exchanged again once it nears its expiry (expires_in, or the JWT exp alone); concurrent calls share one exchange', async () => {
    for (const omitExpiresIn of [false, true]) {
      sts.ttlSeconds = 2; // below twice the skew: kept for half its life, 1 s
      sts.omitExpiresIn = omitExpiresIn;
      try {
        const c = await connect(await tokenOf());
        try {
          const start = exchangesFor('docs-api');
          await echo(c, 'docs');
          assert.equal(exchangesFor('docs-api') - start, 0, 'initialize exchanged it already');
          const before = lastAuthorization('docs');
          await sleep(1_100);
          await Promise.all(Array.from({ length: 8 }, () => echo(c, 'docs')));
          assert.equal(exchangesFor('docs-api') - start, 1, `expired from the cache, exchanged once more (omitExpiresIn ${omitExpiresIn})`);
          await echo(c, 'docs');
          assert.notEqual(lastAuthorization('docs'), before, 'the backend gets the new token, not the header written from the old one');
        } finally {
          await c.close();
        }
      } finally {
        sts.ttlSeconds = 300;
        sts.omitExpiresIn = false;
      }
    }
  });

  it('the STS refusing the caller\'s token: 401 invalid_token with the challenge; nothing of the refusal is kept once it accepts again', async () => {
    const token = await tokenOf();
    const auth = { authorization: `Bearer ${token}` };
    sts.refuse = true;
    try {
      const refused = await post(gateway.url, INITIALIZE, auth);
      assert.equal(refused.status, 401, refused.text);
      assert.match(refused.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
      assert.match(refused.text, /refused the caller's token \(invalid_grant\); re-authentication required/);
      assert.doesNotMatch(refused.text + (refused.headers.get('www-authenticate') ?? ''), new RegExp(token.slice(-20)));
    } finally {
      sts.refuse = false;
    }
    const before = exchangesFor('docs-api');
    const c = await connect(token);
    try {
      assert.match(JSON.stringify(await echo(c, 'docs')), /hi/);
      assert.equal(exchangesFor('docs-api') - before, 1, 'asked again, not answered from a kept refusal');
    } finally {
      await c.close();
    }
  });

  it('the STS down: that backend\'s calls fail with a JSON-RPC error naming it, the others keep working, and it joins again once the STS is back', async () => {
    sts.unavailable = true;
    let c: ConnectedClient | undefined;
    try {
      c = await connect(await tokenOf());
      const names = (await c.client.listTools()).tools.map((t) => t.name).sort();
      assert.deepEqual(names, ['keyed_echo', 'plain_echo'], 'the backends without an exchange joined');
      assert.match(JSON.stringify(await echo(c, 'keyed')), /hi/);
      await assert.rejects(echo(c, 'docs'), /docs_echo|docs/);
    } finally {
      sts.unavailable = false;
    }
    try {
      await sleep(1_100); // the backoff of an absent backend
      assert.match(JSON.stringify(await echo(c, 'docs')), /hi/);
    } finally {
      await c.close();
    }
  });

  it('the STS failing or stalling on a joined session: a JSON-RPC error for that backend\'s call only, naming it and the cause', async () => {
    sts.ttlSeconds = 2;
    const token = await tokenOf();
    const c = await connect(token);
    sts.ttlSeconds = 300;
    try {
      await c.client.listTools();
      await sleep(1_100); // both exchanged tokens left the cache
      sts.unavailable = true;
      const down = await rawCall(token, c, 'docs_echo');
      assert.equal(down.status, 200);
      assert.deepEqual(errorOf(down.json), { code: -32603, message: 'backend "docs": the token exchange service is unavailable', data: { error: 'token_exchange_failed', backend: 'docs', cause: 'unavailable' } });
      assert.match(JSON.stringify(await echo(c, 'keyed')), /hi/, 'the others keep working');
      sts.unavailable = false;
      sts.delayMs = 1_500;
      const slow = await rawCall(token, c, 'wiki_echo');
      assert.equal(slow.status, 200);
      assert.deepEqual(errorOf(slow.json), { code: -32603, message: 'backend "wiki": the token exchange service did not answer within 1000 ms', data: { error: 'token_exchange_timeout', backend: 'wiki', cause: 'timeout' } });
      sts.delayMs = 0;
      assert.match(JSON.stringify(await echo(c, 'docs')), /hi/, 'recovered: nothing of the failures was kept');
      assert.match(JSON.stringify(await echo(c, 'wiki')), /hi/);
      // A session that never listed its tools: the list is made now, without docs, and says why.
      sts.unavailable = true;
      const fresh = await tokenOf();
      const d = await connect(fresh);
      try {
        await sleep(1_100);
        const unlisted = await rawCall(fresh, d, 'docs_echo');
        assert.deepEqual(errorOf(unlisted.json), { code: -32603, message: 'tool docs_echo cannot be called now: backend "docs": the token exchange service is unavailable' });
      } finally {
        await d.close();
      }
    } finally {
      sts.unavailable = false;
      sts.delayMs = 0;
      await c.close();
    }
  });

  it('/metrics counts cache hits and misses, exchange latency and failures by cause', async () => {
    const res = await fetch(gateway.url.replace(/\/mcp$/, '/metrics'), { headers: { authorization: `Bearer ${await tokenOf()}` } });
    assert.equal(res.status, 200);
    const text = await res.text();
    const value = (series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
    assert.ok(value('gatehouse_token_exchange_cache_total{result="hit"}') > 10, text);
    assert.ok(value('gatehouse_token_exchange_cache_total{result="miss"}') >= 5);
    assert.ok(value('gatehouse_token_exchange_failures_total{cause="refused_subject"}') >= 1);
    assert.ok(value('gatehouse_token_exchange_failures_total{cause="unavailable"}') >= 1);
    assert.ok(value('gatehouse_token_exchange_failures_total{cause="timeout"}') >= 1);
    assert.ok(value('gatehouse_token_exchange_seconds_count') >= 5);
    assert.doesNotMatch(text, /eyJ/, 'no token in the metrics');
  });

  it('health checks carry no credential of any kind', async () => {
    for (const backend of Object.values(backends)) {
      const checks = backend.received.filter((r) => JSON.stringify(r.body ?? '').includes('gatehouse-health-check'));
      for (const check of checks) {
        assert.equal(check.headers['authorization'], undefined);
        assert.equal(check.headers['x-api-key'], undefined);
      }
    }
  });

  /** One tools/call on the session of `c`, raw, to see the HTTP status and the JSON-RPC error. */
  async function rawCall(token: string, c: ConnectedClient, tool: string) {
    const session = c.transport.sessionId ?? '';
    return post(gateway.url, JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: tool, arguments: { text: 'x' } } }), {
      authorization: `Bearer ${token}`,
      'mcp-session-id': session,
      'mcp-protocol-version': '2025-11-25',
    });
  }
});

/** The JSON-RPC error of a JSON or SSE answer. */
function errorOf(json: unknown): unknown {
  return (json as { error?: unknown } | undefined)?.error;
}

describe('outgoing auth: token exchange in transparent mode (one backend)', () => {
  let idp: TestProvider;
  let sts: TestSts;
  let backend: SdkServer;
  let gateway: RunningVmcp;
  let deadStsGateway: RunningVmcp;
  let resource: string;
  let deadResource: string;

  before(async () => {
    idp = await startOidcProvider();
    sts = await startSts({ verifySubject: subjectVerifier(idp) });
    backend = await startSdkServer({ name: 'docs', tools: ['echo'] });
    gateway = await startGatewayAt(
      [{ name: 'docs', url: backend.url, externalAuthConfigRef: 'docs-exchange' }],
      (resourceUrl) => {
        resource = resourceUrl;
        return inlineOidcYaml({ issuer: idp.issuer, audience: resourceUrl, resourceUrl });
      },
      [STS_SECRET, exchangeYaml('docs-exchange', sts, 'docs-api', '    timeout: 1s\n')].join('\n---\n'),
    );
    const dead = { tokenUrl: `http://127.0.0.1:${await freePort()}/token` } as TestSts;
    deadStsGateway = await startGatewayAt(
      [{ name: 'docs', url: backend.url, externalAuthConfigRef: 'docs-exchange' }],
      (resourceUrl) => {
        deadResource = resourceUrl;
        return inlineOidcYaml({ issuer: idp.issuer, audience: resourceUrl, resourceUrl });
      },
      [STS_SECRET, exchangeYaml('docs-exchange', dead, 'docs-api')].join('\n---\n'),
    );
  });
  after(async () => {
    await gateway.stop();
    await deadStsGateway.stop();
    await backend.close();
    await sts.close();
    await idp.close();
  });

  async function initialize(url: string, token: string) {
    return post(url, INITIALIZE, { authorization: `Bearer ${token}` });
  }

  it('the backend gets the exchanged token; the STS refusing is a 401, down a 502, slow a 504, each naming the backend and no token', async () => {
    const ok = await initialize(gateway.url, await idp.token(resource));
    assert.equal(ok.status, 200, ok.text);
    const claims = await sts.verify(String(backend.received.at(-1)?.headers['authorization']).replace(/^Bearer /, ''));
    assert.equal(claims.aud, 'docs-api');

    sts.refuse = true;
    const refused = await initialize(gateway.url, await idp.token(resource));
    sts.refuse = false;
    assert.equal(refused.status, 401);
    assert.match(refused.headers.get('www-authenticate') ?? '', /error="invalid_token"/);

    sts.unavailable = true;
    const down = await initialize(gateway.url, await idp.token(resource));
    sts.unavailable = false;
    assert.equal(down.status, 502);
    assert.deepEqual((down.json as { error?: unknown }).error, {
      code: -32603,
      message: 'backend "docs": the token exchange service is unavailable',
      data: { error: 'token_exchange_failed', backend: 'docs', cause: 'unavailable' },
    });

    sts.delayMs = 1_500;
    const slowToken = await idp.token(resource);
    const slow = await initialize(gateway.url, slowToken);
    sts.delayMs = 0;
    assert.equal(slow.status, 504);
    assert.match(slow.text, /backend \\"docs\\": the token exchange service did not answer within 1000 ms/);
    for (const answer of [refused, down, slow]) assert.doesNotMatch(answer.text, /eyJ/, 'no token in an error');

    const unreachable = await initialize(deadStsGateway.url, await idp.token(deadResource));
    assert.equal(unreachable.status, 502);
    assert.match(unreachable.text, /the token exchange service is unavailable/);
  });
});
