/**
 * Reloads that change who may come in, on a gateway whose sessions live in Redis: a session
 * opened before the reload goes on (its record is in the shared store, its backend sessions
 * too), a backend added joins it, and the new incoming auth applies to the very next request —
 * a token for the audience the reload dropped is refused with the new challenge, one for the
 * new audience is served, and the session stays its principal's. Skipped without Redis, except
 * under CI=true.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadVmcpConfig } from '../../core/config/vmcp-config.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { VmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';
import { freePort } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startTestGateway, vmcpYaml, writeConfig, type VmcpYamlOptions } from '../helpers/gateway.ts';
import { inlineOidcYaml } from '../incoming-auth/helpers/gateway.ts';
import { KeyIssuer } from '../incoming-auth/helpers/key-issuer.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';
import { skipIf, type Skip } from '../store/helpers/service.ts';

describe('reload of incoming auth, sessions in Redis', () => {
  let redis: LocalRedis | Skip;
  let issuer: KeyIssuer;
  let alpha: SdkServer;
  let beta: SdkServer;
  let gamma: SdkServer;
  let gateway: RunningVmcp;
  let resource: string;
  let options: (audience: string, withGamma: boolean) => VmcpYamlOptions;
  const builtins = new VmcpBuiltins();

  before(async () => {
    redis = await openLocalRedis();
    if ('skip' in redis) return;
    issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
    alpha = await startSdkServer({ name: 'alpha', tools: ['echo'] });
    beta = await startSdkServer({ name: 'beta', tools: ['echo'] });
    gamma = await startSdkServer({ name: 'gamma', tools: ['echo'] });
    const port = await freePort();
    resource = `http://127.0.0.1:${port}/mcp`;
    const storage = `session: {storage: {type: redis, redis: {addr: "${redis.config.address}", keyPrefix: "${redis.keyPrefix}"}}}`;
    options = (audience, withGamma) => ({
      backends: [{ name: 'alpha', url: alpha.url }, { name: 'beta', url: beta.url }, ...(withGamma ? [{ name: 'gamma', url: gamma.url }] : [])],
      incomingAuth: inlineOidcYaml({ issuer: issuer.url, audience, resourceUrl: resource }),
      config: storage,
    });
    gateway = await startTestGateway({ ...options('aud-one', false), port, builtins });
  });
  after(async () => {
    if ('skip' in redis) return;
    await gateway.stop();
    await Promise.all([alpha.close(), beta.close(), gamma.close(), issuer.close()]);
    await redis.cleanup();
  });

  async function rpc(token: string, body: object, session?: string): Promise<{ status: number; text: string; session: string | null; challenge: string | null }> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` };
    if (session !== undefined) Object.assign(headers, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
    const res = await fetch(resource, { method: 'POST', headers, body: JSON.stringify(body) });
    return { status: res.status, text: await res.text(), session: res.headers.get('mcp-session-id'), challenge: res.headers.get('www-authenticate') };
  }
  const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
  const call = (id: number, name: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: { text: `call ${id}` } } });

  it('a new audience applies at once, the Redis-held session goes on under its principal, and an added backend joins it', async (t) => {
    if (skipIf(t, 'skip' in redis ? redis : null) || 'skip' in redis) return;
    const store = redis;
    const oldToken = await issuer.mint(issuer.claims('aud-one'));
    const opened = await rpc(oldToken, initialize);
    assert.equal(opened.status, 200, opened.text);
    const session = opened.session!;
    await rpc(oldToken, { jsonrpc: '2.0', method: 'notifications/initialized' }, session);
    assert.match((await rpc(oldToken, call(2, 'alpha_echo'), session)).text, /call 2/);
    assert.ok((await store.admin.keys(`${store.keyPrefix}*`)).length > 0, 'the session is in Redis');

    const file = await writeConfig(vmcpYaml(options('aud-two', true)));
    const next = await loadVmcpConfig(file);
    const outcome = await gateway.reload(next, builtins.for(next));
    assert.equal(outcome.status, 'applied', JSON.stringify(outcome));
    if (outcome.status === 'applied') assert.deepEqual([outcome.changes.incomingAuth, outcome.changes.added], [true, ['gamma']]);

    // The audience the reload dropped: refused on the next request, with the challenge.
    const refused = await rpc(oldToken, call(3, 'alpha_echo'), session);
    assert.equal(refused.status, 401, refused.text);
    assert.match(refused.challenge ?? '', /^Bearer /);
    // The same principal with a token for the new audience: the same session, and the added backend in it.
    const newToken = await issuer.mint(issuer.claims('aud-two'));
    const kept = await rpc(newToken, call(4, 'alpha_echo'), session);
    assert.equal(kept.status, 200, kept.text);
    assert.match(kept.text, /call 4/);
    const list = await rpc(newToken, { jsonrpc: '2.0', id: 5, method: 'tools/list' }, session);
    assert.match(list.text, /gamma_echo/);
    assert.match((await rpc(newToken, call(6, 'gamma_echo'), session)).text, /call 6/);
    // Another principal with a valid token still cannot use the session.
    const stranger = await rpc(await issuer.mint(issuer.claims('aud-two', { sub: 'user-2' })), call(7, 'alpha_echo'), session);
    assert.equal(stranger.status, 404, stranger.text);
  });
});
