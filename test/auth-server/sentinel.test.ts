/**
 * The embedded authorization server on Redis Sentinel (a master, a replica and three sentinels
 * started by the test, with passwords): a client registers and logs in, the master is killed,
 * and after the failover the client, its access token and its refresh token are all still good:
 * every write waited for the replica (WAIT), so nothing acknowledged was lost. Skipped without
 * redis-server, except under CI=true.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freePort, waitFor } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { skipIf, type Skip } from '../store/helpers/service.ts';
import { startRedisTopology, type RedisTopology } from '../store/helpers/topology.ts';
import { ClientFlows, startYamlGateway } from './helpers/flows.ts';
import { USER } from './helpers/setup.ts';
import { startUpstreamIdp, type UpstreamIdp } from './helpers/upstream-idp.ts';

const PASSWORD = 'auth-data-secret-71c3';
const SENTINEL_PASSWORD = 'auth-sentinel-secret-0d9a';

describe('embedded authorization server on Redis Sentinel: the master dies', () => {
  let topology: RedisTopology | Skip;
  let idp: UpstreamIdp;
  let backend: SdkServer;
  let port: number;

  before(async () => {
    topology = await startRedisTopology({ replicas: 1, sentinels: 3, password: PASSWORD, sentinelPassword: SENTINEL_PASSWORD });
    if ('skip' in topology) return;
    port = await freePort();
    idp = await startUpstreamIdp({ user: USER, redirectUri: `http://127.0.0.1:${port}/oauth/callback`, clientSecret: 'corp-secret' });
    backend = await startSdkServer({ name: 'echo' });
  });
  after(async () => {
    if ('skip' in topology) return;
    await backend.close();
    await idp.close();
    await topology.stop();
  });

  it('keeps clients, access tokens and refresh tokens through a failover', { timeout: 60_000 }, async (t) => {
    if (skipIf(t, 'skip' in topology ? topology : null)) return;
    const redis = topology as RedisTopology;
    const sentinels = redis.sentinelAddresses.map((a) => `"${a}"`).join(', ');
    const gateway = await startYamlGateway({
      port,
      backendUrl: backend.url,
      idpIssuer: idp.issuer,
      persistentKeys: true,
      storage:
        `{type: redis, redis: {sentinelConfig: {masterName: ${redis.masterName}, sentinelAddrs: [${sentinels}], sentinelPasswordRef: {name: redis, key: sentinel}}, ` +
        'passwordRef: {name: redis, key: password}, keyPrefix: "auth-sentinel-test:"}}',
      secrets: `apiVersion: v1\nkind: Secret\nmetadata: {name: redis}\nstringData: {password: ${PASSWORD}, sentinel: ${SENTINEL_PASSWORD}}\n`,
    });
    const flows = new ClientFlows(`http://127.0.0.1:${port}`);
    try {
      const clientId = await flows.register();
      const tokens = await flows.login(clientId);
      const before = await redis.currentMasterPort();
      await redis.master.kill();
      await waitFor(async () => (await redis.currentMasterPort().catch(() => before)) !== before, 30_000);
      // The client reconnects to the promoted replica; the first requests may still meet the old master's absence.
      let renewed: Awaited<ReturnType<ClientFlows['refresh']>> | null = null;
      await waitFor(async () => {
        renewed = await flows.refresh(clientId, tokens.refresh).catch(() => null);
        return renewed !== null && renewed.status !== 503 && renewed.status !== 500;
      }, 20_000);
      assert.equal(renewed!.status, 200, JSON.stringify(renewed!.body));
      assert.equal(await flows.mcpStatus(tokens.access), 200, 'the access token from before the failover');
      const again = await flows.login(clientId);
      assert.ok(again.access.length > 0, 'the client registered before the failover logs in again');
    } finally {
      await gateway.stop();
    }
  });
});
