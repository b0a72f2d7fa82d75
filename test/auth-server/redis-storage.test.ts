/**
 * The embedded authorization server on Redis (the machine's, 127.0.0.1:6379), configured from
 * YAML as a user would: with persistent keys, a restart keeps registered clients, access tokens
 * and refresh tokens valid; with the process's own keys, the access tokens issued before a
 * restart are refused (401) and the start-up warning said so.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/virtual-mcp-server.ts';
import { freePort } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';
import { skipIf, type Skip } from '../store/helpers/service.ts';
import { captureLog, type CapturedLog } from '../store/helpers/log.ts';
import { Browser } from './helpers/browser.ts';
import { USER } from './helpers/setup.ts';
import { startUpstreamIdp, type UpstreamIdp } from './helpers/upstream-idp.ts';
import { createHash } from 'node:crypto';

const REDIRECT = 'http://127.0.0.1:7779/callback';
const SIGNING_KEY = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
const HMAC = randomBytes(32).toString('base64url');

describe('embedded authorization server on Redis: restarts', () => {
  let redis: LocalRedis | Skip;
  let idp: UpstreamIdp;
  let backend: SdkServer;
  let port: number;
  let issuer: string;

  before(async () => {
    redis = await openLocalRedis();
    if ('skip' in redis) return;
    port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
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
  async function start(persistentKeys: boolean, log: CapturedLog = captureLog('info')): Promise<RunningVmcp> {
    const local = redis as LocalRedis;
    const keys = persistentKeys ? '    signingKeySecretRefs: [{name: auth, key: signing}]\n    hmacSecretRefs: [{name: auth, key: hmac}]\n' : '';
    return startTestGateway({
      port,
      log: log.log,
      backends: [{ name: 'echo', url: backend.url }],
      incomingAuth: `  incomingAuth:\n    type: oidc\n    resourceUrl: "${issuer}/mcp"\n    oidcConfig: {type: inline, inline: {issuer: "${issuer}", clientId: vmcp, audience: "${issuer}/mcp"}}`,
      spec:
        `  authServerConfig:\n    issuer: "${issuer}"\n${keys}` +
        `    upstreamProviders:\n      - {name: corp, type: oidc, oidcConfig: {issuerUrl: "${idp.issuer}", clientId: gatehouse, clientSecretRef: {name: corp, key: secret}}}\n` +
        `    storage: {type: redis, redis: {addr: "${local.config.address}", keyPrefix: "${local.keyPrefix}"}}`,
      documents:
        'apiVersion: v1\nkind: Secret\nmetadata: {name: corp}\nstringData: {secret: corp-secret}\n---\n' +
        `apiVersion: v1\nkind: Secret\nmetadata: {name: auth}\nstringData:\n  hmac: "${HMAC}"\n  signing: |\n${SIGNING_KEY.trim().split('\n').map((l) => `    ${l}`).join('\n')}\n`,
    });
  }

  async function register(): Promise<string> {
    const res = await fetch(`${issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT] }) });
    assert.equal(res.status, 201);
    return ((await res.json()) as { client_id: string }).client_id;
  }

  async function login(clientId: string): Promise<{ access: string; refresh: string }> {
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const query = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state: 'r' });
    const visit = await new Browser().visit(`${issuer}/oauth/authorize?${query}`, (url) => url.href.startsWith(REDIRECT));
    const code = visit.url.searchParams.get('code');
    assert.ok(code !== null, visit.trail.join('\n'));
    const res = await fetch(`${issuer}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: clientId, redirect_uri: REDIRECT, code_verifier: verifier }),
    });
    const body = (await res.json()) as { access_token: string; refresh_token: string };
    assert.equal(res.status, 200, JSON.stringify(body));
    return { access: body.access_token, refresh: body.refresh_token };
  }

  async function mcpStatus(access: string): Promise<number> {
    const res = await fetch(`${issuer}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${access}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    });
    await res.arrayBuffer();
    return res.status;
  }

  async function refresh(clientId: string, token: string): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${issuer}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token, client_id: clientId }) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  it('with persistent keys: clients, access tokens and refresh tokens outlive a restart', async (t) => {
    if (skipIf(t, 'skip' in redis ? redis : null)) return;
    let gateway = await start(true);
    let clientId: string;
    let tokens: { access: string; refresh: string };
    try {
      clientId = await register();
      tokens = await login(clientId);
      assert.equal(await mcpStatus(tokens.access), 200);
    } finally {
      await gateway.stop();
    }
    gateway = await start(true);
    try {
      assert.equal(await mcpStatus(tokens.access), 200, 'the access token from before the restart');
      const renewed = await refresh(clientId, tokens.refresh);
      assert.equal(renewed.status, 200, JSON.stringify(renewed.body));
      assert.equal(await mcpStatus(String(renewed.body['access_token'])), 200);
      const again = await login(clientId);
      assert.ok(again.access.length > 0, 'the client registered before the restart logs in again');
      const keys = await (redis as LocalRedis).admin.keys(`${(redis as LocalRedis).keyPrefix}*`);
      assert.ok(keys.some((key) => key.includes('oidc:Client:')), 'the registered client is in Redis');
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
      tokens = await login(await register());
      assert.equal(await mcpStatus(tokens.access), 200);
    } finally {
      await gateway.stop();
    }
    gateway = await start(false);
    try {
      assert.equal(await mcpStatus(tokens.access), 401);
    } finally {
      await gateway.stop();
    }
  });
});
