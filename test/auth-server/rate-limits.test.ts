/**
 * Every endpoint of the embedded authorization server has a budget per client address and one
 * shared by all addresses (authServerConfig.rateLimiting): past either, a 429 with Retry-After
 * and an OAuth error body that names the budget. The client address is the gateway's (behind a
 * trusted proxy, the one X-Forwarded-For names; an IPv6 client by its /64). With Redis storage
 * the budgets are shared by the replicas.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_AUTH_SERVER_RATE_LIMITS, type AuthServerEndpointGroup } from '../../core/config/auth-server-limits.ts';
import type { AuthServerConfig } from '../../core/config/vmcp-types.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';
import { skipIf, type Skip } from '../store/helpers/service.ts';
import { Browser } from './helpers/browser.ts';
import { startAuthGateway, type AuthGateway } from './helpers/setup.ts';

const TRUSTED = '  server:\n    trustedProxies: ["127.0.0.1", "::1"]';

/** Every group at `perAddress` and `shared` a minute. */
function budgets(perAddress: number, shared: number): AuthServerConfig['rateLimiting'] {
  const bounds = { perKey: { maxTokens: perAddress, refillPeriodMs: 60_000 }, shared: { maxTokens: shared, refillPeriodMs: 60_000 } };
  return Object.fromEntries(Object.keys(DEFAULT_AUTH_SERVER_RATE_LIMITS).map((group) => [group, bounds])) as AuthServerConfig['rateLimiting'];
}

/** Every route of the server, with its group. */
const ROUTES: readonly { method: string; path: string; group: AuthServerEndpointGroup }[] = [
  { method: 'GET', path: '/.well-known/oauth-authorization-server', group: 'metadata' },
  { method: 'GET', path: '/.well-known/openid-configuration', group: 'metadata' },
  { method: 'OPTIONS', path: '/.well-known/oauth-authorization-server', group: 'metadata' },
  { method: 'GET', path: '/.well-known/jwks.json', group: 'metadata' },
  { method: 'GET', path: '/oauth/authorize?client_id=x', group: 'authorization' },
  { method: 'GET', path: '/oauth/authorize/some-uid', group: 'login' },
  { method: 'POST', path: '/oauth/token', group: 'token' },
  { method: 'OPTIONS', path: '/oauth/token', group: 'metadata' },
  { method: 'POST', path: '/oauth/register', group: 'registration' },
  { method: 'OPTIONS', path: '/oauth/register', group: 'metadata' },
  { method: 'GET', path: '/oauth/interaction/some-uid', group: 'login' },
  { method: 'GET', path: '/oauth/interaction/some-uid/consent', group: 'login' },
  { method: 'POST', path: '/oauth/interaction/some-uid/confirm', group: 'login' },
  { method: 'GET', path: '/oauth/interaction/some-uid/callback?state=x', group: 'login' },
  { method: 'GET', path: '/oauth/callback?state=x', group: 'login' },
];

function send(issuer: string, method: string, path: string, address: string): Promise<Response> {
  const headers: Record<string, string> = { 'x-forwarded-for': address, origin: issuer };
  let body: string | undefined;
  if (method === 'POST') {
    headers['content-type'] = path.endsWith('/register') ? 'application/json' : 'application/x-www-form-urlencoded';
    body = path.endsWith('/register') ? JSON.stringify({ redirect_uris: ['http://127.0.0.1:7000/cb'] }) : 'grant_type=refresh_token&refresh_token=x&client_id=y';
  }
  if (method === 'OPTIONS') Object.assign(headers, { origin: 'http://localhost:6274', 'access-control-request-method': 'POST' });
  return fetch(`${issuer}${path}`, { method, headers, redirect: 'manual', ...(body === undefined ? {} : { body }) });
}

async function assertRefused(res: Response, field: string): Promise<void> {
  assert.equal(res.status, 429);
  const seconds = Number(res.headers.get('retry-after'));
  assert.ok(seconds >= 1 && seconds <= 60, `Retry-After ${res.headers.get('retry-after')}`);
  assert.match(res.headers.get('content-type') ?? '', /application\/json/);
  const body = (await res.json()) as Record<string, unknown>;
  assert.equal(body['error'], 'temporarily_unavailable');
  assert.match(String(body['error_description']), new RegExp(`\\(authServerConfig\\.rateLimiting\\.${field.replaceAll('.', '\\.')}\\)`), String(body['error_description']));
}

describe('authorization server budgets: every endpoint, per address and shared', () => {
  let setup: AuthGateway;
  before(async () => {
    setup = await startAuthGateway({ spec: TRUSTED, bounds: { rateLimiting: budgets(3, 1_000) } });
  });
  after(() => setup.close());

  ROUTES.forEach(({ method, path, group }, i) => {
    it(`${method} ${path.split('?')[0]}: ${3} from one address, then 429 naming rateLimiting.${group}.perAddress`, async () => {
      const address = `198.51.100.${i + 1}`;
      for (let n = 0; n < 3; n++) {
        const res = await send(setup.issuer, method, path, address);
        await res.arrayBuffer();
        assert.notEqual(res.status, 429, `request ${n + 1}`);
      }
      const refused = await send(setup.issuer, method, path, address);
      await assertRefused(refused, `${group}.perAddress`);
      if (path.startsWith('/oauth/token') || path.startsWith('/oauth/register') || group === 'metadata') {
        assert.equal(refused.headers.get('access-control-allow-origin'), '*', 'a browser-based client can read why');
      }
      const other = await send(setup.issuer, method, path, `203.0.113.${i + 1}`);
      await other.arrayBuffer();
      assert.notEqual(other.status, 429, 'another address has a budget of its own');
    });
  });

  it('an IPv6 client counts by its /64', async () => {
    for (let n = 0; n < 3; n++) await (await send(setup.issuer, 'POST', '/oauth/token', `2001:db8:7:7::${n + 1}`)).arrayBuffer();
    await assertRefused(await send(setup.issuer, 'POST', '/oauth/token', '2001:db8:7:7:ffff::9'), 'token.perAddress');
    const next = await send(setup.issuer, 'POST', '/oauth/token', '2001:db8:7:8::1');
    await next.arrayBuffer();
    assert.notEqual(next.status, 429);
  });
});

describe('authorization server budgets: the shared budget', () => {
  let setup: AuthGateway;
  before(async () => {
    setup = await startAuthGateway({ spec: TRUSTED, bounds: { rateLimiting: budgets(3, 5) } });
  });
  after(() => setup.close());

  it('refuses every address once all of them together spent it; an address past its own budget spends none of it', async () => {
    const statuses: number[] = [];
    // The first address sends 10: 3 pass, and its 7 refusals take nothing from the shared 5.
    for (let n = 0; n < 10; n++) statuses.push((await send(setup.issuer, 'POST', '/oauth/token', '198.51.100.1')).status);
    for (let n = 0; n < 2; n++) statuses.push((await send(setup.issuer, 'POST', '/oauth/token', '198.51.100.2')).status);
    assert.deepEqual(statuses.map((s) => s === 429), [false, false, false, true, true, true, true, true, true, true, false, false]);
    await assertRefused(await send(setup.issuer, 'POST', '/oauth/token', '198.51.100.3'), 'token.shared');
  });
});

describe('authorization server budgets: a sign-in under way outlives a flood from many addresses', () => {
  const REDIRECT = 'http://127.0.0.1:7777/callback';
  const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
  let setup: AuthGateway;
  before(async () => {
    // Authorizations and login steps: 50 per address, 20 shared by every address.
    const tight = { perKey: { maxTokens: 50, refillPeriodMs: 60_000 }, shared: { maxTokens: 20, refillPeriodMs: 60_000 } };
    const rates = { ...budgets(1_000, 1_000), authorization: tight, login: tight };
    setup = await startAuthGateway({ spec: TRUSTED, bounds: { rateLimiting: rates } });
  });
  after(() => setup.close());

  it("its steps go on once others spent the shared budgets; a new sign-in waits, and steps of no sign-in are refused", async () => {
    const registered = await fetch(`${setup.issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.200' }, body: JSON.stringify({ redirect_uris: [REDIRECT] }) });
    const client = ((await registered.json()) as { client_id: string }).client_id;
    const authorize = `${setup.issuer}/oauth/authorize?${new URLSearchParams({ client_id: client, response_type: 'code', redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256' })}`;
    // The user is at the identity provider's page: their sign-in is under way.
    const user = new Browser({ 'x-forwarded-for': '198.51.100.201' });
    const atProvider = await user.visit(authorize, (url) => url.href.startsWith(setup.corp.issuer));
    assert.ok(atProvider.url.href.startsWith(setup.corp.issuer), `${atProvider.status} ${atProvider.body.slice(0, 300)} ${atProvider.trail.join('\n')}`);
    // Ten addresses (one party with a /56 of IPv6, say) each stay within their own budgets and together spend the shared ones.
    let refused = 0;
    for (let a = 0; a < 10; a++) {
      for (const path of ['/oauth/interaction/no-such-uid', '/oauth/authorize?client_id=x']) {
        for (let n = 0; n < 3; n++) {
          const res = await send(setup.issuer, 'GET', path, `203.0.113.${a + 1}`);
          await res.arrayBuffer();
          if (res.status === 429) refused++;
        }
      }
    }
    assert.ok(refused >= 20, `the flood spent the shared budgets (${refused} refused)`);
    await assertRefused(await send(setup.issuer, 'GET', '/oauth/callback?state=forged.state', '203.0.113.99'), 'login.shared');
    // The user comes back from the provider: the callback, the consent and the code go through.
    const done = await user.visit(atProvider.url.href, (url) => url.href.startsWith(REDIRECT));
    assert.ok(done.url.href.startsWith(REDIRECT) && done.url.searchParams.get('code') !== null, `${done.status} ${done.trail.join('\n')}`);
    // A new sign-in from another address meets the spent budget of authorizations.
    await assertRefused(await send(setup.issuer, 'GET', new URL(authorize).pathname + new URL(authorize).search, '198.51.100.202'), 'authorization.shared');
  });
});

describe('authorization server budgets on Redis storage: one budget for every replica', () => {
  let redis: LocalRedis | Skip;
  let replicas: AuthGateway[] = [];
  before(async () => {
    redis = await openLocalRedis();
    if ('skip' in redis) return;
    const storage = { type: 'redis' as const, ...redis.config };
    for (let i = 0; i < 2; i++) replicas.push(await startAuthGateway({ spec: TRUSTED, storage, bounds: { rateLimiting: budgets(4, 1_000) } }));
  });
  after(async () => {
    for (const replica of replicas) await replica.close();
    replicas = [];
    if (!('skip' in redis)) await redis.cleanup();
  });

  it('an address that spreads its requests over the replicas gets its budget once', async (t) => {
    if (skipIf(t, 'skip' in redis ? redis : null)) return;
    const statuses: number[] = [];
    for (let n = 0; n < 6; n++) {
      const res = await send(replicas[n % 2]!.issuer, 'POST', '/oauth/register', '198.51.100.77');
      statuses.push(res.status);
      if (res.status === 429) await assertRefused(res, 'registration.perAddress');
      else await res.arrayBuffer();
    }
    assert.deepEqual(statuses, [201, 201, 201, 201, 429, 429]);
    const keys = await (redis as LocalRedis).admin.keys(`${(redis as LocalRedis).keyPrefix}ratelimit:auth-server:registration:*`);
    assert.ok(keys.length >= 2, keys.join(' '));
  });
});
