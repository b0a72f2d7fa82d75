/**
 * Two gateway processes' worth of the embedded authorization server (two gateways in this
 * process, each its own bridge and provider) sharing Redis and keys behind one address: a
 * round-robin HTTP proxy sends each request to the other one. A client registers, the user
 * consents and logs in, the client exchanges its code, refreshes and calls the MCP endpoint,
 * every step landing on either replica, and all of it works: nothing lives in one replica only.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import httpProxy from 'http-proxy';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { freePort } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';
import { skipIf, type Skip } from '../store/helpers/service.ts';
import { ClientFlows, startYamlGateway } from './helpers/flows.ts';
import { USER } from './helpers/setup.ts';
import { startUpstreamIdp, type UpstreamIdp } from './helpers/upstream-idp.ts';

describe('embedded authorization server: two replicas behind one address', () => {
  let redis: LocalRedis | Skip;
  let idp: UpstreamIdp;
  let backend: SdkServer;
  let replicas: RunningVmcp[] = [];
  let balancer: Server;
  const served = [0, 0];

  before(async () => {
    redis = await openLocalRedis();
    if ('skip' in redis) return;
    const publicPort = await freePort();
    idp = await startUpstreamIdp({ user: USER, redirectUri: `http://127.0.0.1:${publicPort}/oauth/callback`, clientSecret: 'corp-secret' });
    backend = await startSdkServer({ name: 'echo' });
    const storage = `{type: redis, redis: {addr: "${redis.config.address}", keyPrefix: "${redis.keyPrefix}"}}`;
    for (let i = 0; i < 2; i++) {
      replicas.push(await startYamlGateway({ port: await freePort(), publicPort, backendUrl: backend.url, idpIssuer: idp.issuer, persistentKeys: true, storage }));
    }
    // Round robin per request, the client's Host kept (the replicas check it against the public address).
    const proxy = httpProxy.createProxyServer({ xfwd: false, changeOrigin: false, agent: undefined });
    let next = 0;
    balancer = createServer((req, res) => {
      const i = next++ % 2;
      served[i]!++;
      proxy.web(req, res, { target: new URL(replicas[i]!.url).origin }, () => res.writeHead(502).end());
    });
    await new Promise<void>((resolve) => balancer.listen(publicPort, '127.0.0.1', resolve));
  });
  after(async () => {
    if ('skip' in redis) return;
    await new Promise<void>((resolve) => balancer.close(() => resolve()));
    for (const replica of replicas) await replica.stop();
    await backend.close();
    await idp.close();
    await redis.cleanup();
  });

  it('register, consent, login, code, refresh and MCP calls land on either replica and all work', async (t) => {
    if (skipIf(t, 'skip' in redis ? redis : null)) return;
    const flows = new ClientFlows(`http://127.0.0.1:${(balancer.address() as { port: number }).port}`);
    const clientId = await flows.register();
    let tokens = await flows.login(clientId);
    for (let i = 0; i < 4; i++) {
      assert.equal(await flows.mcpStatus(tokens.access), 200, `MCP call ${i}`);
      const renewed = await flows.refresh(clientId, tokens.refresh);
      assert.equal(renewed.status, 200, JSON.stringify(renewed.body));
      tokens = { access: String(renewed.body['access_token']), refresh: String(renewed.body['refresh_token']) };
    }
    assert.ok(served[0]! > 5 && served[1]! > 5, `both replicas served (${served.join(' / ')})`);
  });
});
