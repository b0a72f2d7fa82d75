/**
 * Two uses of one refresh token at the same moment (plugins/auth-server/refresh-gate.ts), on
 * memory storage and on Redis storage with the two uses sent to two replicas: the second waits
 * for the first's rotation and gets the same answer, so one successor lives, not two; a use after
 * the rotation completed is a replay as before; and when the first rotation fails, the one that
 * waited rotates itself (the retry rule of refresh-retry.ts).
 * The rotation is slowed (the old token's use takes 300 ms) so that the second use surely arrives
 * while the first is under way.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { MemoryAdapter } from '../../plugins/auth-server/memory-adapter.ts';
import { RedisAdapter } from '../../plugins/auth-server/redis-adapter.ts';
import { freePort } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';
import { skipIf, type Skip } from '../store/helpers/service.ts';
import { ClientFlows, startYamlGateway } from './helpers/flows.ts';
import { USER } from './helpers/setup.ts';
import { startUpstreamIdp, type UpstreamIdp } from './helpers/upstream-idp.ts';

type Patchable = Record<string, (...args: unknown[]) => Promise<unknown>>;

/** Every call of `method` on `proto` is delayed by `ms`, and the first `failures` of them where `when` holds fail. */
function patch(t: TestContext, proto: object, method: string, ms: number, failures = 0, when: (...args: unknown[]) => boolean = () => true): void {
  const target = proto as Patchable;
  const original = target[method]!;
  let failed = 0;
  target[method] = async function (this: unknown, ...args: unknown[]) {
    await new Promise((resolve) => setTimeout(resolve, ms));
    if (failed < failures && when(...args)) {
      failed++;
      throw new Error(`injected: ${method} failed`);
    }
    return original.apply(this, args);
  };
  t.after(() => {
    target[method] = original;
  });
}

const isRefreshToken = (_id: unknown, payload: unknown): boolean => (payload as { kind?: string }).kind === 'RefreshToken';

for (const kind of ['memory', 'redis'] as const) {
  describe(`two uses of one refresh token at once (${kind} storage${kind === 'redis' ? ', two replicas' : ''})`, () => {
    let redis: LocalRedis | Skip | null = null;
    let idp: UpstreamIdp;
    let backend: SdkServer;
    const gateways: RunningVmcp[] = [];
    let flows: ClientFlows[] = [];
    let clientId: string;
    const skip = (): Skip | null => (redis !== null && 'skip' in redis ? redis : null);
    const adapterProto = kind === 'memory' ? MemoryAdapter.prototype : RedisAdapter.prototype;

    before(async () => {
      if (kind === 'redis') {
        redis = await openLocalRedis();
        if ('skip' in redis) return;
      }
      const ports = [await freePort(), await freePort()];
      // Replicas answer for one issuer: the second serves the first's URL (a load balancer's).
      const issuer = `http://127.0.0.1:${ports[0]}`;
      idp = await startUpstreamIdp({ user: USER, redirectUri: `${issuer}/oauth/callback`, clientSecret: 'corp-secret' });
      backend = await startSdkServer({ name: 'echo' });
      const local = redis as LocalRedis | null;
      const storage = local === null ? '{type: memory}' : `{type: redis, redis: {addr: "${local.config.address}", keyPrefix: "${local.keyPrefix}"}}`;
      for (const port of kind === 'redis' ? ports : ports.slice(0, 1)) {
        gateways.push(await startYamlGateway({ port, publicPort: ports[0]!, backendUrl: backend.url, idpIssuer: idp.issuer, storage, persistentKeys: true }));
      }
      flows = gateways.map((_, i) => new ClientFlows(`http://127.0.0.1:${ports[i]}`));
      clientId = await flows[0]!.register();
    });
    after(async () => {
      if (skip() !== null) return;
      for (const gateway of gateways) await gateway.stop();
      await backend.close();
      await idp.close();
      if (redis !== null) await (redis as LocalRedis).cleanup();
    });

    /** The flows of the replica that serves the n-th use (memory: the one gateway). */
    const at = (n: number): ClientFlows => flows[n % flows.length]!;

    it('the second use waits for the first\'s rotation and gets the same answer: one successor lives, and the old token is a replay afterwards', async (t) => {
      if (skipIf(t, skip())) return;
      const tokens = await at(0).login(clientId);
      patch(t, adapterProto, 'consume', 300);
      const [first, second] = await Promise.all([at(0).refresh(clientId, tokens.refresh), at(1).refresh(clientId, tokens.refresh)]);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(second.status, 200, JSON.stringify(second.body));
      assert.equal(second.body['refresh_token'], first.body['refresh_token'], 'the same successor, not a second one');
      assert.equal(second.body['access_token'], first.body['access_token']);
      // The one successor rotates on; the old token used again now is a replay, which revokes the grant.
      const next = await at(0).refresh(clientId, String(first.body['refresh_token']));
      assert.equal(next.status, 200, JSON.stringify(next.body));
      const replay = await at(1).refresh(clientId, tokens.refresh);
      assert.equal(replay.body['error'], 'invalid_grant', JSON.stringify(replay.body));
      const afterReplay = await at(0).refresh(clientId, String(next.body['refresh_token']));
      assert.equal(afterReplay.body['error'], 'invalid_grant', 'the replay revoked the grant');
    });

    it('when the first use\'s rotation fails, the use that waited rotates itself (the retry rule) and its successor lives', async (t) => {
      if (skipIf(t, skip())) return;
      const tokens = await at(0).login(clientId);
      // The first successor's save fails (after 300 ms), the second's succeeds.
      patch(t, adapterProto, 'upsert', 300, 1, isRefreshToken);
      const [first, second] = await Promise.all([at(0).refresh(clientId, tokens.refresh), at(1).refresh(clientId, tokens.refresh)]);
      const [failed, succeeded] = first.status === 200 ? [second, first] : [first, second];
      assert.ok(failed.status >= 500, `one failed: ${failed.status} ${JSON.stringify(failed.body)}`);
      assert.equal(succeeded.status, 200, JSON.stringify(succeeded.body));
      const next = await at(0).refresh(clientId, String(succeeded.body['refresh_token']));
      assert.equal(next.status, 200, JSON.stringify(next.body));
    });
  });
}
