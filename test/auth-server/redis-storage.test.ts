/**
 * The embedded authorization server on Redis (the machine's, 127.0.0.1:6379), configured from
 * YAML as a user would: with persistent keys, a restart keeps registered clients, access tokens
 * and refresh tokens valid; with the process's own keys, the access tokens issued before a
 * restart are refused (401) and the start-up warning said so. A start that fails (its port
 * taken) leaves no connection behind.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { freePort } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';
import { skipIf, type Skip } from '../store/helpers/service.ts';
import { captureLog, type CapturedLog } from '../store/helpers/log.ts';
import { ClientFlows, startYamlGateway } from './helpers/flows.ts';
import { USER } from './helpers/setup.ts';
import { startUpstreamIdp, type UpstreamIdp } from './helpers/upstream-idp.ts';

describe('embedded authorization server on Redis: restarts', () => {
  let redis: LocalRedis | Skip;
  let idp: UpstreamIdp;
  let backend: SdkServer;
  let port: number;
  let issuer: string;
  let flows: ClientFlows;

  before(async () => {
    redis = await openLocalRedis();
    if ('skip' in redis) return;
    port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    flows = new ClientFlows(issuer);
    idp = await startUpstreamIdp({ user: USER, redirectUri: `${issuer}/oauth/callback`, clientSecret: 'corp-secret' });
    backend = await startSdkServer({ name: 'echo' });
  });
  after(async () => {
    if ('skip' in redis) return;
    await backend.close();
    await idp.close();
    await redis.cleanup();
  });

  /** The gateway from YAML, Redis storage under this run's prefix; with or without persistent keys. */
  function start(persistentKeys: boolean, log: CapturedLog = captureLog('info')): Promise<RunningVmcp> {
    const local = redis as LocalRedis;
    return startYamlGateway({ port, backendUrl: backend.url, idpIssuer: idp.issuer, persistentKeys, log, storage: `{type: redis, redis: {addr: "${local.config.address}", keyPrefix: "${local.keyPrefix}"}}` });
  }

  it('a gateway whose port is taken fails to start with EADDRINUSE and keeps no Redis connection', async (t) => {
    if (skipIf(t, 'skip' in redis ? redis : null)) return;
    const sockets = (): number => process.getActiveResourcesInfo().filter((kind) => kind === 'TCPSocketWrap').length;
    const before = sockets(); // first in the file: no keep-alive socket of an earlier test closes meanwhile
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
    try {
      await assert.rejects(start(true), /EADDRINUSE/);
    } finally {
      await new Promise<void>((resolve) => squatter.close(() => resolve()));
    }
    // The authorization server's Redis client connects in the plugin's start(), which never came:
    // before, it stayed connected and held the process open after the failed start.
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(sockets(), before, process.getActiveResourcesInfo().join(' '));
  });

  it('with persistent keys: clients, access tokens and refresh tokens outlive a restart', async (t) => {
    if (skipIf(t, 'skip' in redis ? redis : null)) return;
    let gateway = await start(true);
    let clientId: string;
    let tokens: { access: string; refresh: string };
    try {
      clientId = await flows.register();
      tokens = await flows.login(clientId);
      assert.equal(await flows.mcpStatus(tokens.access), 200);
    } finally {
      await gateway.stop();
    }
    gateway = await start(true);
    try {
      assert.equal(await flows.mcpStatus(tokens.access), 200, 'the access token from before the restart');
      const renewed = await flows.refresh(clientId, tokens.refresh);
      assert.equal(renewed.status, 200, JSON.stringify(renewed.body));
      assert.equal(await flows.mcpStatus(String(renewed.body['access_token'])), 200);
      const again = await flows.login(clientId);
      assert.ok(again.access.length > 0, 'the client registered before the restart logs in again');
      const keys = await (redis as LocalRedis).admin.keys(`${(redis as LocalRedis).keyPrefix}*`);
      const clientKey = keys.find((key) => key.endsWith(`oidc:Client:${clientId}`));
      assert.ok(clientKey !== undefined, 'the registered client is in Redis');
      // Kept while used, for as long as a refresh token lives (168 h by default), not for ever.
      const admin = (redis as LocalRedis).admin;
      await admin.expire(clientKey, 60);
      assert.equal((await flows.refresh(clientId, String(renewed.body['refresh_token']))).status, 200);
      const ttl = await admin.ttl(clientKey);
      assert.ok(ttl > 167 * 3600 && ttl <= 168 * 3600, `a use renews its idle time (TTL ${ttl} s)`);
      assert.ok(keys.some((key) => key.includes('auth:tokens:')), 'the upstream tokens of the logins are in Redis');
    } finally {
      await gateway.stop();
    }
  });

  it('with the process\'s own keys: the access tokens of before a restart are refused, as the warning said', async (t) => {
    if (skipIf(t, 'skip' in redis ? redis : null)) return;
    const log = captureLog('info');
    let gateway = await start(false, log);
    let tokens: { access: string; refresh: string };
    try {
      assert.ok(log.lines().some((line) => /a restart invalidates every token/.test(String(line['msg']))));
      tokens = await flows.login(await flows.register());
      assert.equal(await flows.mcpStatus(tokens.access), 200);
    } finally {
      await gateway.stop();
    }
    gateway = await start(false);
    try {
      assert.equal(await flows.mcpStatus(tokens.access), 401);
    } finally {
      await gateway.stop();
    }
  });
});
