/**
 * Floods of the authorization server's stores from one client address, with the endpoints'
 * rate budgets lifted so that what is tested is the stores' own bounds, on memory and on Redis
 * storage:
 *  - sign-ins in progress: each GET of /oauth/interaction/:uid stores a leg. One per interaction
 *    (a flood of GETs of one interaction replaces it), at most maxPendingLoginsPerAddress
 *    interactions per address and maxPendingLogins in all; past either a 429 that names the
 *    bound, and another user's sign-in in progress always completes;
 *  - registrations: a full maxClients budget drops the oldest client nobody used, never one a
 *    user granted, and with none to drop answers 503 naming the bound (never a 500).
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_AUTH_SERVER_RATE_LIMITS } from '../../core/config/auth-server-limits.ts';
import type { AuthServerConfig } from '../../core/config/vmcp-types.ts';
import { clientBudget } from '../../plugins/auth-server/store-errors.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';
import { skipIf, type Skip } from '../store/helpers/service.ts';
import { Browser } from './helpers/browser.ts';
import { startAuthGateway, type AuthGateway } from './helpers/setup.ts';

const REDIRECT = 'http://127.0.0.1:7777/callback';
const TRUSTED = '  server:\n    trustedProxies: ["127.0.0.1", "::1"]';
const lifted = { perKey: { maxTokens: 100_000, refillPeriodMs: 60_000 }, shared: { maxTokens: 100_000, refillPeriodMs: 60_000 } };
const RATES: AuthServerConfig['rateLimiting'] = { ...DEFAULT_AUTH_SERVER_RATE_LIMITS, login: lifted, authorization: lifted, registration: lifted, token: lifted };
const PER_ADDRESS = 5;
const TOTAL = 12;
const MAX_CLIENTS = 6;

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

for (const kind of ['memory', 'redis'] as const) {
  describe(`floods of the authorization server's stores (${kind} storage)`, () => {
    let redis: LocalRedis | Skip | null = null;
    let setup: AuthGateway;
    const skip = (): Skip | null => (redis !== null && 'skip' in redis ? redis : null);
    const local = (): LocalRedis => redis as LocalRedis;

    before(async () => {
      if (kind === 'redis') {
        redis = await openLocalRedis();
        if ('skip' in redis) return;
      }
      setup = await startAuthGateway({
        spec: TRUSTED,
        ...(kind === 'redis' ? { storage: { type: 'redis', ...local().config } } : {}),
        bounds: { rateLimiting: RATES, maxPendingLoginsPerAddress: PER_ADDRESS, maxPendingLogins: TOTAL, maxClients: MAX_CLIENTS },
      });
    });
    after(async () => {
      if (skip() !== null) return;
      await setup.close();
      if (redis !== null) await local().cleanup();
    });

    async function register(address: string): Promise<Response> {
      return fetch(`${setup.issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': address }, body: JSON.stringify({ redirect_uris: [REDIRECT] }) });
    }

    async function clientId(address: string): Promise<string> {
      const res = await register(address);
      assert.equal(res.status, 201, await res.clone().text());
      return ((await res.json()) as { client_id: string }).client_id;
    }

    function authorizeUrl(client: string, challenge = pkce().challenge): string {
      return `${setup.issuer}/oauth/authorize?${new URLSearchParams({ client_id: client, response_type: 'code', redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256' })}`;
    }

    /** Opens an interaction in `browser` (its cookie kept) and answers its URL, not yet requested. */
    async function openInteraction(browser: Browser, client: string): Promise<string> {
      const visit = await browser.visit(authorizeUrl(client), (url) => url.pathname.startsWith('/oauth/interaction/'));
      assert.equal(visit.status, 0, visit.body);
      return visit.url.href;
    }

    /** One GET of the interaction: 303 (a leg stored, on to the provider) or the refusal. */
    async function getInteraction(browser: Browser, url: string): Promise<{ status: number; body: string }> {
      const visit = await browser.visit(url, (next) => !next.href.startsWith(setup.issuer));
      return { status: visit.status === 0 ? 303 : visit.status, body: visit.body };
    }

    let victimClient: string;
    let victimTokens: { refresh: string } | null = null;

    it('a flood of sign-in steps from one address neither grows the store past its bounds nor ends another user\'s sign-in', async (t) => {
      if (skipIf(t, skip())) return;
      victimClient = await clientId('198.51.100.10');
      const { verifier, challenge } = pkce();
      const victim = new Browser({ 'x-forwarded-for': '198.51.100.10' });
      // The victim is at the provider's login page: its leg waits for the callback.
      const atProvider = await victim.visit(authorizeUrl(victimClient, challenge), (url) => url.href.startsWith(setup.corp.issuer));
      assert.ok(atProvider.url.href.startsWith(setup.corp.issuer), atProvider.trail.join('\n'));

      const attackerClient = await clientId('203.0.113.66');
      const attacker = new Browser({ 'x-forwarded-for': '203.0.113.66' });
      const statuses: number[] = [];
      for (let i = 0; i < PER_ADDRESS + 3; i++) {
        const url = await openInteraction(attacker, attackerClient);
        for (let n = 0; n < 30; n++) {
          const answer = await getInteraction(attacker, url);
          statuses.push(answer.status);
          if (answer.status === 429) assert.match(JSON.parse(answer.body).error_description, /at most 5 \(authServerConfig\.maxPendingLoginsPerAddress\)/);
        }
      }
      assert.deepEqual(statuses.filter((s) => s !== 303 && s !== 429), [], 'nothing but a leg or a 429');
      assert.equal(statuses.filter((s) => s === 303).length, PER_ADDRESS * 30, 'each of its first 5 interactions, as often as it likes');
      assert.equal(statuses.filter((s) => s === 429).length, 3 * 30);
      if (kind === 'redis') {
        const legs = await local().admin.keys(`${local().keyPrefix}auth:leg:*`);
        assert.equal(legs.length, PER_ADDRESS + 1, `one key per interaction, not per GET (${legs.length})`);
      }
      // Other addresses fill the total: past it a new sign-in is refused, and none is dropped.
      for (const address of ['203.0.113.67', '203.0.113.68']) {
        const browser = new Browser({ 'x-forwarded-for': address });
        for (let i = 0; i < 3; i++) assert.equal((await getInteraction(browser, await openInteraction(browser, attackerClient))).status, 303);
      }
      const late = new Browser({ 'x-forwarded-for': '203.0.113.69' });
      const refused = await getInteraction(late, await openInteraction(late, attackerClient));
      assert.equal(refused.status, 429);
      assert.match(JSON.parse(refused.body).error_description, /at most 12 \(authServerConfig\.maxPendingLogins\)/);

      // The victim comes back from the provider: the sign-in completes, the client gets its code.
      const done = await victim.visit(atProvider.url.href, (url) => url.href.startsWith(REDIRECT));
      const code = done.url.searchParams.get('code');
      assert.ok(code !== null, done.trail.join('\n'));
      const res = await fetch(`${setup.issuer}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: victimClient, redirect_uri: REDIRECT, code_verifier: verifier }),
      });
      const body = (await res.json()) as { refresh_token: string };
      assert.equal(res.status, 200, JSON.stringify(body));
      victimTokens = { refresh: body.refresh_token };
    });

    it('a full client budget: 503 naming maxClients while no unused client is old enough, then the oldest unused make room, never a client a user granted', async (t) => {
      if (skipIf(t, skip())) return;
      assert.ok(victimTokens !== null, 'the first test logged the victim in');
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) {
        const res = await register('203.0.113.66');
        statuses.push(res.status);
        if (res.status === 503) {
          assert.ok(Number(res.headers.get('retry-after')) >= 1);
          const body = (await res.json()) as { error: string; error_description: string };
          assert.equal(body.error, 'temporarily_unavailable');
          assert.match(body.error_description, /at most 6 registered clients \(authServerConfig\.maxClients\)/);
        } else await res.arrayBuffer();
      }
      assert.deepEqual(statuses, [201, 201, 201, 201, 503, 503, 503, 503, 503, 503], 'two registered before, four more fit');
      const grace = clientBudget.unusedGraceMs;
      clientBudget.unusedGraceMs = 0;
      t.after(() => {
        clientBudget.unusedGraceMs = grace;
      });
      for (let i = 0; i < 40; i++) assert.equal((await register('203.0.113.66')).status, 201);
      if (kind === 'redis') {
        const clients = await local().admin.keys(`${local().keyPrefix}oidc:Client:*`);
        assert.equal(clients.length, MAX_CLIENTS, clients.join(' '));
      }
      // The victim's client, which a user granted, is still there: its refresh token refreshes, and it may authorize again.
      const refreshed = await fetch(`${setup.issuer}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: victimTokens.refresh, client_id: victimClient }),
      });
      assert.equal(refreshed.status, 200, await refreshed.text());
      const again = await fetch(authorizeUrl(victimClient), { redirect: 'manual' });
      assert.equal(again.status, 303);
      assert.match(again.headers.get('location') ?? '', /\/oauth\/interaction\//);
    });
  });
}
