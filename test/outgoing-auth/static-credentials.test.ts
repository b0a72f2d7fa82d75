/**
 * The static strategies end to end: `bearerToken` and `headerInjection` in transparent mode (a
 * client's own copies of the header never pass); `outgoingAuth.source:
 * inline` with a `default` and an explicit `unauthenticated` exception in an aggregated group.
 * Backends report the headers they received; health checks carry none of it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { connectClient } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { INITIALIZE, startTestGateway } from '../helpers/gateway.ts';
import { rawRequest } from '../incoming-auth/helpers/gateway.ts';

const SECRET = 'apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {token: "static-t0ken", key: "k-123"}';
const BEARER = 'apiVersion: gatehouse.dev/v1alpha1\nkind: MCPExternalAuthConfig\nmetadata: {name: bearer}\nspec: {type: bearerToken, bearerToken: {tokenSecretRef: {name: creds, key: token}}}';
const API_KEY = 'apiVersion: gatehouse.dev/v1alpha1\nkind: MCPExternalAuthConfig\nmetadata: {name: api-key}\nspec: {type: headerInjection, headerInjection: {headerName: X-API-Key, valueSecretRef: {name: creds, key: key}}}';
const NONE = 'apiVersion: gatehouse.dev/v1alpha1\nkind: MCPExternalAuthConfig\nmetadata: {name: none}\nspec: {type: unauthenticated}';

describe('outgoing auth: static strategies', () => {
  const backends: Record<string, SdkServer> = {};
  let transparent: RunningVmcp;
  let aggregated: RunningVmcp;
  let keyed: RunningVmcp;

  before(async () => {
    for (const name of ['solo', 'alpha', 'beta', 'gamma', 'keyed']) backends[name] = await startSdkServer({ name, tools: ['echo'] });
    transparent = await startTestGateway({
      backends: [{ name: 'solo', url: backends['solo']!.url, externalAuthConfigRef: 'bearer' }],
      documents: [SECRET, BEARER].join('\n---\n'),
    });
    keyed = await startTestGateway({
      backends: [{ name: 'keyed', url: backends['keyed']!.url, externalAuthConfigRef: 'api-key' }],
      documents: [SECRET, API_KEY].join('\n---\n'),
    });
    aggregated = await startTestGateway({
      // alpha's own reference does not count with source inline.
      backends: [
        { name: 'alpha', url: backends['alpha']!.url, externalAuthConfigRef: 'bearer' },
        { name: 'beta', url: backends['beta']!.url },
        { name: 'gamma', url: backends['gamma']!.url },
      ],
      outgoingAuth: '{source: inline, backends: {gamma: {type: externalAuthConfigRef, externalAuthConfigRef: {name: none}}}, default: {externalAuthConfigRef: {name: api-key}}}',
      documents: [SECRET, BEARER, API_KEY, NONE].join('\n---\n'),
    });
  });
  after(async () => {
    await transparent.stop();
    await aggregated.stop();
    await keyed.stop();
    for (const backend of Object.values(backends)) await backend.close();
  });

  it('bearerToken, transparent: every request to the backend carries the Secret\'s token, whatever the client sent', async () => {
    const c = await connectClient(transparent.url, { headers: { authorization: 'Bearer the-clients-own' }, waitForStandaloneStream: false });
    try {
      assert.match(JSON.stringify(await c.client.callTool({ name: 'echo', arguments: { text: 'hi' } })), /hi/);
    } finally {
      await c.close();
    }
    // Every request a client's request led to; the gateway's own health checks carry no credential at all.
    const received = backends['solo']!.received.filter((r) => r.rpcMethods.length > 0 || r.method !== 'POST');
    const checks = received.filter((r) => String(r.headers['user-agent']).startsWith('gatehouse/'));
    const sent = received.filter((r) => !checks.includes(r));
    assert.ok(sent.length >= 3);
    for (const request of sent) assert.equal(request.headers['authorization'], 'Bearer static-t0ken');
    for (const check of checks) assert.equal(check.headers['authorization'], undefined);
  });

  it('a client sending the credential\'s header (twice) in transparent mode: only the gateway\'s value reaches the backend', async () => {
    const answer = await rawRequest(keyed.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-api-key': ['attacker-1', 'attacker-2'] },
      body: INITIALIZE,
    });
    assert.equal(answer.status, 200, answer.text);
    const last = backends['keyed']!.received.filter((r) => !String(r.headers['user-agent']).startsWith('gatehouse/')).at(-1);
    assert.equal(last?.headers['x-api-key'], 'k-123');
  });

  it('inline with a default: the listed backend\'s own strategy (none), the default for the others', async () => {
    const c = await connectClient(aggregated.url, { waitForStandaloneStream: false });
    try {
      for (const name of ['alpha', 'beta', 'gamma']) assert.match(JSON.stringify(await c.client.callTool({ name: `${name}_echo`, arguments: { text: 'hi' } })), /hi/);
    } finally {
      await c.close();
    }
    const last = (name: string) => backends[name]!.received.filter((r) => r.rpcMethods.includes('tools/call')).at(-1)?.headers;
    assert.deepEqual([last('alpha')?.['x-api-key'], last('alpha')?.['authorization']], ['k-123', undefined]);
    assert.deepEqual([last('beta')?.['x-api-key'], last('beta')?.['authorization']], ['k-123', undefined]);
    assert.deepEqual([last('gamma')?.['x-api-key'], last('gamma')?.['authorization']], [undefined, undefined]);
  });
});
