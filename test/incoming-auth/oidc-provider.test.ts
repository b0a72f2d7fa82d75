/**
 * End to end with a real OpenID provider (oidc-provider on loopback):
 * - a client-credentials JWT access token for the gateway's resource reaches the backend;
 * - an MCP SDK client with no token discovers everything itself from the 401: the challenge's
 *   resource_metadata → RFC 9728 document → the provider's metadata → a client-credentials
 *   token for the resource (RFC 8707) → the call succeeds;
 * - opaque tokens go through RFC 7662 introspection with the gateway's client credentials:
 *   active → accepted (and cached), revoked → 401.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createLogger } from '../../core/observe/log.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import type { TokenValidator } from '../../plugins/incoming-auth/contract.ts';
import { createTokenValidator } from '../../plugins/incoming-auth/validator.ts';
import { connectClient } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { challengeParams, inlineOidcYaml, rawRequest, secretYaml, startGatewayAt } from './helpers/gateway.ts';
import { GATEHOUSE_CLIENT, startOidcProvider, type TestProvider } from './helpers/oidc-provider.ts';

describe('oidc gateway with a real OpenID provider', () => {
  let provider: TestProvider;
  let backend: SdkServer;
  let gateway: RunningVmcp;
  let resource: string;

  before(async () => {
    provider = await startOidcProvider();
    backend = await startSdkServer({ name: 'alpha' });
    gateway = await startGatewayAt(
      [{ name: 'alpha', url: backend.url }],
      (resourceUrl) => {
        resource = resourceUrl;
        return inlineOidcYaml({
          issuer: provider.issuer,
          audience: resourceUrl,
          resourceUrl,
          clientId: GATEHOUSE_CLIENT.id,
          clientSecretName: 'gatehouse-oidc',
          scopes: ['mcp:tools'],
        });
      },
      secretYaml('gatehouse-oidc', GATEHOUSE_CLIENT.secret),
    );
    assert.equal(gateway.url, resource, 'resourceUrl is the gateway URL');
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
    await provider.close();
  });

  it('a client-credentials JWT from the provider reaches the backend through the SDK client', async () => {
    const token = await provider.token(resource);
    assert.equal(token.split('.').length, 3, 'a JWT access token');
    const c = await connectClient(gateway.url, { headers: { authorization: `Bearer ${token}` } });
    try {
      const tools = (await c.client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes('echo'));
      const result = await c.client.callTool({ name: 'echo', arguments: { text: 'from a real issuer' } });
      assert.deepEqual(result.content, [{ type: 'text', text: 'alpha: from a real issuer' }]);
    } finally {
      await c.close();
    }
  });

  it('a token the provider minted for another resource is refused', async () => {
    const token = await provider.token('http://127.0.0.1:1/elsewhere');
    const res = await rawRequest(gateway.url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{}' });
    assert.equal(res.status, 401);
    assert.equal((res.json as { error: string }).error, 'invalid_token');
  });

  it('the challenge tells a client where to authenticate; the SDK follows it to a token and connects', async () => {
    const res = await rawRequest(gateway.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    const challenge = challengeParams(res.headers['www-authenticate'] as string);
    const origin = new URL(gateway.url).origin;
    assert.equal(challenge.resource_metadata, `${origin}/.well-known/oauth-protected-resource/mcp`);
    assert.equal(challenge.scope, 'mcp:tools');
    const prm = await rawRequest(challenge.resource_metadata!);
    assert.deepEqual(prm.json, {
      resource,
      authorization_servers: [provider.issuer],
      bearer_methods_supported: ['header'],
      scopes_supported: ['mcp:tools'],
    });

    const authProvider = new ClientCredentialsProvider({
      clientId: 'mcp-client',
      clientSecret: 'mcp-secret',
      expectedIssuer: provider.issuer,
      scope: 'mcp:tools',
    });
    const client = new Client({ name: 'cc-client', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(gateway.url), { authProvider });
    try {
      await client.connect(transport);
      const result = await client.callTool({ name: 'echo', arguments: { text: 'discovered' } });
      assert.deepEqual(result.content, [{ type: 'text', text: 'alpha: discovered' }]);
      assert.ok(authProvider.tokens()?.access_token, 'the SDK obtained a token by itself');
    } finally {
      await client.close();
    }
  });

  it('introspects an active opaque token, caches the answer, and refuses a revoked one', async () => {
    const opaque = await provider.token(resource, 'opaque-client');
    assert.equal(opaque.split('.').length, 1, 'an opaque access token');
    const introspected = provider.introspections;
    const c = await connectClient(gateway.url, { headers: { authorization: `Bearer ${opaque}` } });
    try {
      const result = await c.client.callTool({ name: 'echo', arguments: { text: 'opaque' } });
      assert.deepEqual(result.content, [{ type: 'text', text: 'alpha: opaque' }]);
      await c.client.listTools();
    } finally {
      await c.close();
    }
    assert.equal(provider.introspections - introspected, 1, 'one introspection for the whole session (cached until exp)');

    const revoked = await provider.token(resource, 'opaque-client');
    await provider.revoke(revoked);
    const seen = backend.received.length;
    const res = await rawRequest(gateway.url, { method: 'POST', headers: { authorization: `Bearer ${revoked}`, 'content-type': 'application/json' }, body: '{}' });
    assert.equal(res.status, 401);
    assert.deepEqual(res.json, { error: 'invalid_token', error_description: 'the token is not active (revoked, expired or unknown to the issuer)' });
    assert.equal(challengeParams(res.headers['www-authenticate'] as string).error, 'invalid_token');
    assert.equal(backend.received.length, seen);
  });

  it('an opaque token for another resource is refused after introspection', async () => {
    const opaque = await provider.token('http://127.0.0.1:1/elsewhere', 'opaque-client');
    const res = await rawRequest(gateway.url, { method: 'POST', headers: { authorization: `Bearer ${opaque}`, 'content-type': 'application/json' }, body: '{}' });
    assert.equal(res.status, 401);
    assert.match((res.json as { error_description: string }).error_description, /not meant for this resource/);
  });
});

describe('introspection results cached for a bounded time (a real OpenID provider, a test clock)', () => {
  let provider: TestProvider;
  let validator: TokenValidator;
  const clock = { now: Date.now() };
  const resource = 'http://127.0.0.1:4483/mcp';

  before(async () => {
    provider = await startOidcProvider();
    validator = await createTokenValidator(
      { issuer: provider.issuer, audience: resource, clientId: GATEHOUSE_CLIENT.id, clientSecret: GATEHOUSE_CLIENT.secret, now: () => clock.now },
      createLogger('silent'),
    );
  });
  after(async () => {
    validator.close();
    await provider.close();
  });

  it('sees a revocation once the active answer is a minute old, not at the token\'s exp', async () => {
    const opaque = await provider.token(resource, 'opaque-client');
    const before = provider.introspections;
    assert.equal((await validator.verify(opaque)).subject, 'opaque-client');
    await validator.verify(opaque);
    assert.equal(provider.introspections - before, 1, 'cached while fresh');
    await provider.revoke(opaque);
    clock.now += 61_000;
    await assert.rejects(Promise.resolve().then(() => validator.verify(opaque)), /not active/);
    assert.equal(provider.introspections - before, 2);
  });

  it('asks once for a token the issuer refused, then remembers the refusal for a few seconds', async () => {
    const revoked = await provider.token(resource, 'opaque-client');
    await provider.revoke(revoked);
    const before = provider.introspections;
    for (let i = 0; i < 5; i++) await assert.rejects(Promise.resolve().then(() => validator.verify(revoked)), /not active/);
    assert.equal(provider.introspections - before, 1, 'one introspection for five attempts');
    clock.now += 11_000;
    await assert.rejects(Promise.resolve().then(() => validator.verify(revoked)), /not active/);
    assert.equal(provider.introspections - before, 2, 'asked again once the refusal is old');
  });

  it('never remembers an unreachable issuer as a refusal', async () => {
    const opaque = await provider.token(resource, 'opaque-client');
    const down = await createTokenValidator(
      { issuer: provider.issuer, audience: resource, clientId: GATEHOUSE_CLIENT.id, clientSecret: 'wrong-secret', now: () => clock.now },
      createLogger('silent'),
    );
    try {
      // A wrong client secret: the issuer refuses the gateway, not the token → 503, not cached.
      await assert.rejects(Promise.resolve().then(() => down.verify(opaque)), (err: { status?: number }) => err.status === 503);
      await assert.rejects(Promise.resolve().then(() => down.verify(opaque)), (err: { status?: number }) => err.status === 503);
    } finally {
      down.close();
    }
  });
});
