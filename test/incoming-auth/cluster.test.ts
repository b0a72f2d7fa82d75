/**
 * `oidcConfig.type: cluster` against a stand-in API server: HTTPS with a throwaway CA, discovery
 * at /.well-known/openid-configuration and keys at /openid/v1/jwks, both requiring the pod's
 * service-account token, and an issuer name that differs from the URL it is reached at (as in
 * real clusters). Service-account-shaped tokens; the principal lands on ctx.principal.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Principal } from '../../core/plugin-api/context.ts';
import { definePlugin } from '../../core/plugin-api/plugin.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { clusterCredentialFiles, SERVICE_ACCOUNT_DIR } from '../../plugins/incoming-auth/cluster.ts';
import { connectClient } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { INITIALIZE, startTestGateway } from '../helpers/gateway.ts';
import { rawRequest } from './helpers/gateway.ts';
import { KeyIssuer } from './helpers/key-issuer.ts';
import { makeTestCa, type TestCa } from './helpers/tls.ts';

const SA_TOKEN = 'gatehouse-pod-service-account-token';
const CLUSTER_ISSUER = 'https://kubernetes.default.svc.cluster.local';
const RESOURCE = 'http://127.0.0.1:4483/mcp';

function clusterYaml(apiServer: string, audience?: string): string {
  return [
    '  incomingAuth:',
    '    type: oidc',
    `    resourceUrl: "${RESOURCE}"`,
    '    oidcConfig:',
    '      type: cluster',
    `      cluster: {issuer: "${apiServer}"${audience ? `, audience: ${audience}` : ''}}`,
  ].join('\n');
}

function serviceAccountDir(ca: string, token = SA_TOKEN): string {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-sa-'));
  writeFileSync(join(dir, 'ca.crt'), ca);
  writeFileSync(join(dir, 'token'), token);
  return dir;
}

describe('cluster mode: service-account tokens from the API server', () => {
  let tls: TestCa;
  let apiServer: KeyIssuer;
  let backend: SdkServer;
  let gateway: RunningVmcp;
  const principals: (Principal | null)[] = [];
  const probe = definePlugin({
    name: 'principal-probe',
    create: () => ({ name: 'principal-probe', authorize: (ctx) => void principals.push(ctx.principal) }),
  });

  const saToken = (claims: Record<string, unknown> = {}) => {
    const now = Math.floor(Date.now() / 1000);
    return apiServer.mint(
      {
        iss: CLUSTER_ISSUER,
        sub: 'system:serviceaccount:tools:agent',
        aud: ['gatehouse'],
        iat: now,
        nbf: now,
        exp: now + 3600,
        'kubernetes.io': { namespace: 'tools', serviceaccount: { name: 'agent', uid: '6f1c2f0e-0000-4000-8000-000000000001' }, pod: { name: 'agent-0', uid: 'p-1' } },
        ...claims,
      },
      apiServer.keys[0],
      { typ: 'JWT' },
    );
  };

  before(async () => {
    tls = makeTestCa();
    apiServer = await KeyIssuer.start({
      tls: { key: tls.key, cert: tls.cert },
      jwksPath: '/openid/v1/jwks',
      discovery: 'oidc',
      requireBearer: SA_TOKEN,
      documentIssuer: () => CLUSTER_ISSUER,
      // The document may point elsewhere (e.g. the external API address); keys come from the API server itself.
      extraMetadata: { jwks_uri: 'https://203.0.113.10:6443/openid/v1/jwks' },
    });
    await apiServer.addKey('RS256');
    process.env['GATEHOUSE_SERVICEACCOUNT_DIR'] = serviceAccountDir(tls.ca);
    backend = await startSdkServer({ name: 'alpha' });
    gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: backend.url }],
      incomingAuth: clusterYaml(apiServer.url),
      plugins: [{ definition: probe, config: undefined, source: 'test' }],
    });
  });
  after(async () => {
    delete process.env['GATEHOUSE_SERVICEACCOUNT_DIR'];
    await gateway.stop();
    await backend.close();
    await apiServer.close();
  });

  it('accepts a service-account token; the principal reaches the plugins after incoming auth', async () => {
    const token = await saToken();
    const c = await connectClient(gateway.url, { headers: { authorization: `Bearer ${token}` } });
    try {
      const result = await c.client.callTool({ name: 'echo', arguments: { text: 'in cluster' } });
      assert.deepEqual(result.content, [{ type: 'text', text: 'alpha: in cluster' }]);
    } finally {
      await c.close();
    }
    const principal = principals.at(-1);
    assert.ok(principal);
    assert.equal(principal.subject, 'system:serviceaccount:tools:agent');
    assert.equal(principal.issuer, CLUSTER_ISSUER, 'the issuer auto-detected from the discovery document');
    assert.deepEqual((principal.claims['kubernetes.io'] as { namespace: string }).namespace, 'tools');
    assert.equal(principal.token, token, 'the raw token is kept for token exchange');
    assert.deepEqual(JSON.parse(JSON.stringify(principal)), { subject: 'system:serviceaccount:tools:agent', issuer: CLUSTER_ISSUER }, 'but never serialised');
  });

  it('fetched discovery and keys from the API server with the service-account token, over the cluster CA', () => {
    assert.ok(apiServer.discoveryRequests >= 1 && apiServer.jwksRequests >= 1);
    assert.ok(apiServer.bearers.every((b) => b === SA_TOKEN), 'every fetch carried the service-account token');
  });

  it('refuses tokens for another audience, or naming the API server URL instead of the cluster issuer', async () => {
    for (const [claims, description] of [
      [{ aud: ['https://kubernetes.default.svc'] }, /not meant for this resource/],
      [{ iss: apiServer.url }, /expected issuer/],
    ] as const) {
      const res = await rawRequest(gateway.url, {
        method: 'POST',
        headers: { authorization: `Bearer ${await saToken(claims)}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: INITIALIZE,
      });
      assert.equal(res.status, 401);
      assert.equal((res.json as { error: string }).error, 'invalid_token');
      assert.match((res.json as { error_description: string }).error_description, description);
    }
  });

  it('with a CA that did not sign the API server certificate, keys cannot be fetched: 503, not a 401', async () => {
    const other = makeTestCa('some-other-ca');
    process.env['GATEHOUSE_SERVICEACCOUNT_DIR'] = serviceAccountDir(other.ca);
    const untrusting = await startTestGateway({ backends: [{ name: 'alpha', url: backend.url }], incomingAuth: clusterYaml(apiServer.url) });
    try {
      const res = await rawRequest(untrusting.url, {
        method: 'POST',
        headers: { authorization: `Bearer ${await saToken()}`, 'content-type': 'application/json' },
        body: INITIALIZE,
      });
      assert.equal(res.status, 503);
      assert.equal((res.json as { error: string }).error, 'temporarily_unavailable');
    } finally {
      await untrusting.stop();
    }
  });

  it('without the service-account mount, start fails with a message that says what to set', async () => {
    process.env['GATEHOUSE_SERVICEACCOUNT_DIR'] = join(tmpdir(), 'gatehouse-no-such-dir');
    await assert.rejects(
      startTestGateway({ backends: [{ name: 'alpha', url: backend.url }], incomingAuth: clusterYaml(apiServer.url) }),
      (err: Error) => /service-account CA bundle/.test(err.message) && /GATEHOUSE_SERVICEACCOUNT_DIR/.test(err.message),
    );
  });
});

describe('clusterCredentialFiles', () => {
  it('defaults to the standard mount; the directory and each file can be overridden by env', () => {
    assert.deepEqual(clusterCredentialFiles({}), { caFile: `${SERVICE_ACCOUNT_DIR}/ca.crt`, tokenFile: `${SERVICE_ACCOUNT_DIR}/token` });
    assert.deepEqual(clusterCredentialFiles({ GATEHOUSE_SERVICEACCOUNT_DIR: '/sa' }), { caFile: '/sa/ca.crt', tokenFile: '/sa/token' });
    assert.deepEqual(clusterCredentialFiles({ GATEHOUSE_SERVICEACCOUNT_DIR: '/sa', GATEHOUSE_K8S_CA_FILE: '/ca.pem', GATEHOUSE_K8S_TOKEN_FILE: '/tok' }), {
      caFile: '/ca.pem',
      tokenFile: '/tok',
    });
  });
});
