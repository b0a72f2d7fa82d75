/**
 * A refresh whose rotation did not complete may be tried again with the same refresh token
 * (plugins/auth-server/refresh-retry.ts), on memory and on Redis storage: the provider marks the
 * old token used before it stores the successor and builds the answer, and a storage failure in
 * between must not turn the client's retry into a replay (grant revoked, login lost). Failures
 * are injected into the adapter (the successor's save, the completion mark) and into the login
 * store (the identity the access token's claims read after the successor is stored). What stays
 * strict: a replay after a refresh that succeeded, and a retry past the window.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import { decodeJwt } from 'jose';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { MemoryAdapter } from '../../plugins/auth-server/memory-adapter.ts';
import { RedisAdapter } from '../../plugins/auth-server/redis-adapter.ts';
import { MemoryLoginStore, RedisLoginStore } from '../../plugins/auth-server/login-store.ts';
import { refreshRetry } from '../../plugins/auth-server/refresh-retry.ts';
import { freePort } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';
import { skipIf, type Skip } from '../store/helpers/service.ts';
import { ClientFlows, startYamlGateway } from './helpers/flows.ts';
import { USER } from './helpers/setup.ts';
import { startUpstreamIdp, type UpstreamIdp } from './helpers/upstream-idp.ts';

type Patchable = Record<string, (...args: unknown[]) => Promise<unknown>>;

/** Makes the next call of `method` on `proto` for which `when` holds fail (once). */
function failOnce(t: TestContext, proto: object, method: string, when: (...args: unknown[]) => boolean = () => true): { failed: () => boolean } {
  const target = proto as Patchable;
  const original = target[method]!;
  let failed = false;
  target[method] = async function (this: unknown, ...args: unknown[]) {
    if (!failed && when(...args)) {
      failed = true;
      throw new Error(`injected: ${method} failed`);
    }
    return original.apply(this, args);
  };
  t.after(() => {
    target[method] = original;
  });
  return { failed: () => failed };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

for (const kind of ['memory', 'redis'] as const) {
  describe(`refresh-token rotation that did not complete is retryable (${kind} storage)`, () => {
    let redis: LocalRedis | Skip | null = null;
    let idp: UpstreamIdp;
    let backend: SdkServer;
    let gateway: RunningVmcp | null = null;
    let flows: ClientFlows;
    let clientId: string;
    const skip = (): Skip | null => (redis !== null && 'skip' in redis ? redis : null);

    before(async () => {
      if (kind === 'redis') {
        redis = await openLocalRedis();
        if ('skip' in redis) return;
      }
      const port = await freePort();
      const issuer = `http://127.0.0.1:${port}`;
      flows = new ClientFlows(issuer);
      idp = await startUpstreamIdp({ user: USER, redirectUri: `${issuer}/oauth/callback`, clientSecret: 'corp-secret' });
      backend = await startSdkServer({ name: 'echo' });
      const local = redis as LocalRedis | null;
      const storage = local === null ? '{type: memory}' : `{type: redis, redis: {addr: "${local.config.address}", keyPrefix: "${local.keyPrefix}"}}`;
      gateway = await startYamlGateway({ port, backendUrl: backend.url, idpIssuer: idp.issuer, storage, persistentKeys: true });
      clientId = await flows.register();
    });
    after(async () => {
      if (skip() !== null) return;
      await gateway?.stop();
      await backend.close();
      await idp.close();
      if (redis !== null) await (redis as LocalRedis).cleanup();
    });

    const adapterProto = kind === 'memory' ? MemoryAdapter.prototype : RedisAdapter.prototype;
    const storeProto = kind === 'memory' ? MemoryLoginStore.prototype : RedisLoginStore.prototype;

    /** The login's upstream token of corp is still kept (Redis: its hash; memory: not observable here). */
    async function upstreamKept(access: string): Promise<boolean> {
      if (redis === null) return true;
      const tsid = String(decodeJwt(access)['tsid']);
      return (await (redis as LocalRedis).admin.hexists(`${(redis as LocalRedis).keyPrefix}auth:tokens:${tsid}`, 'corp')) === 1;
    }

    /** The token refreshes twice more (it and its successor are live) and serves the MCP endpoint. */
    async function assertLive(refresh: string): Promise<void> {
      const next = await flows.refresh(clientId, refresh);
      assert.equal(next.status, 200, JSON.stringify(next.body));
      assert.equal(await flows.mcpStatus(String(next.body['access_token'])), 200);
      assert.ok(await upstreamKept(String(next.body['access_token'])), "the login's upstream token is kept");
    }

    for (const [what, inject] of [
      ["the successor's save", (t: TestContext) => failOnce(t, adapterProto, 'upsert', (_id, payload) => (payload as { kind?: string }).kind === 'RefreshToken')],
      ["the access token's claims (read after the successor is stored)", (t: TestContext) => failOnce(t, storeProto, 'identity')],
      ['the mark that the refresh completed', (t: TestContext) => failOnce(t, adapterProto, 'rotated')],
    ] as const) {
      it(`a refresh that failed in ${what} is retried with the same token and succeeds; the grant lives on`, async (t) => {
        if (skipIf(t, skip())) return;
        const tokens = await flows.login(clientId);
        const injected = inject(t);
        const failed = await flows.refresh(clientId, tokens.refresh);
        assert.ok(injected.failed(), 'the failure was injected');
        assert.ok(failed.status >= 500, `the refresh failed: ${failed.status} ${JSON.stringify(failed.body)}`);
        const retried = await flows.refresh(clientId, tokens.refresh);
        assert.equal(retried.status, 200, `the retry: ${JSON.stringify(retried.body)}`);
        assert.notEqual(retried.body['refresh_token'], tokens.refresh);
        await assertLive(String(retried.body['refresh_token']));
        // That retry completed: the old token used again now is a replay.
        const replay = await flows.refresh(clientId, tokens.refresh);
        assert.equal(replay.body['error'], 'invalid_grant', JSON.stringify(replay.body));
      });
    }

    it('a replay after a successful refresh is still invalid_grant and revokes the grant', async (t) => {
      if (skipIf(t, skip())) return;
      const tokens = await flows.login(clientId);
      const refreshed = await flows.refresh(clientId, tokens.refresh);
      assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
      const replay = await flows.refresh(clientId, tokens.refresh);
      assert.equal(replay.status, 400);
      assert.equal(replay.body['error'], 'invalid_grant');
      const successor = await flows.refresh(clientId, String(refreshed.body['refresh_token']));
      assert.equal(successor.body['error'], 'invalid_grant', 'the replay revoked the grant: the successor stops working');
      assert.equal(await upstreamKept(String(refreshed.body['access_token'])), redis === null, "the revoked grant's upstream tokens are dropped");
    });

    it('past the window, the retry of a rotation that failed is a replay', async (t) => {
      if (skipIf(t, skip())) return;
      const windowMs = refreshRetry.windowMs;
      refreshRetry.windowMs = 400;
      t.after(() => {
        refreshRetry.windowMs = windowMs;
      });
      const tokens = await flows.login(clientId);
      failOnce(t, adapterProto, 'upsert', (_id, payload) => (payload as { kind?: string }).kind === 'RefreshToken');
      assert.ok((await flows.refresh(clientId, tokens.refresh)).status >= 500);
      await sleep(700);
      const late = await flows.refresh(clientId, tokens.refresh);
      assert.equal(late.status, 400);
      assert.equal(late.body['error'], 'invalid_grant', JSON.stringify(late.body));
    });
  });
}
