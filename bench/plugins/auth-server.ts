/**
 * The embedded authorization server (plugins/auth-server/), in one run:
 *
 *  1. The token endpoint: refresh_token grants (each rotates, so each needs the last answer)
 *     through the gateway, 8 chains at once, requests per second and wall time per request,
 *     next to raw jose signing of the same kind of JWT (ES256) in the same process: what the
 *     endpoint costs beyond the signature it must make.
 *  2. An upstream token read (UpstreamTokenAccess.accessToken, a fresh token, no refresh), per
 *     call, from the in-memory store and from Redis (127.0.0.1:6379).
 *
 * `node --import tsx bench/plugins/auth-server.ts` (not part of `npm run bench`: it needs the
 * test identity provider); results in results/auth-server.json.
 */
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateKeyPair, SignJWT } from 'jose';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { DEFAULT_AUTH_SERVER_RATE_LIMITS } from '../../core/config/auth-server-limits.ts';
import { MemoryLoginStore, RedisLoginStore, type LoginStore } from '../../plugins/auth-server/login-store.ts';
import { MemoryRefreshLock, UpstreamTokenAccess } from '../../plugins/auth-server/upstream-token-access.ts';
import { Browser } from '../../test/auth-server/helpers/browser.ts';
import { startAuthGateway } from '../../test/auth-server/helpers/setup.ts';
import { RESULTS_DIR } from '../load/harness.ts';

const LEGS = { total: 50_000, perAddress: 100 };
const SECONDS = Number(process.env['BENCH_DURATION'] ?? 5);
const CHAINS = 8;
const REDIRECT = 'http://127.0.0.1:7790/callback';

async function refreshThroughput(): Promise<{ requests: number; rps: number; meanMs: number }> {
  // One address sends every request here: the per-address limits would measure themselves.
  const lifted = { perKey: { maxTokens: 1_000_000, refillPeriodMs: 60_000 }, shared: { maxTokens: 1_000_000, refillPeriodMs: 60_000 } };
  const setup = await startAuthGateway({ bounds: { rateLimiting: { ...DEFAULT_AUTH_SERVER_RATE_LIMITS, token: lifted, authorization: lifted, login: lifted } } });
  try {
    const reg = await fetch(`${setup.issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT] }) });
    const clientId = ((await reg.json()) as { client_id: string }).client_id;
    const token = (form: Record<string, string>) =>
      fetch(`${setup.issuer}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ client_id: clientId, ...form }) }).then(
        (res) => res.json() as Promise<{ refresh_token?: string; error?: string }>,
      );
    const refreshTokens: string[] = [];
    for (let i = 0; i < CHAINS; i++) {
      const verifier = randomBytes(32).toString('base64url');
      const query = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256' });
      const visit = await new Browser().visit(`${setup.issuer}/oauth/authorize?${query}`, (url) => url.href.startsWith(REDIRECT));
      const issued = await token({ grant_type: 'authorization_code', code: visit.url.searchParams.get('code')!, redirect_uri: REDIRECT, code_verifier: verifier });
      refreshTokens.push(issued.refresh_token!);
    }
    let requests = 0;
    const started = performance.now();
    const until = started + SECONDS * 1000;
    await Promise.all(
      refreshTokens.map(async (first) => {
        let current = first;
        while (performance.now() < until) {
          const answer = await token({ grant_type: 'refresh_token', refresh_token: current });
          if (answer.refresh_token === undefined) throw new Error(`refresh failed: ${answer.error}`);
          current = answer.refresh_token;
          requests++;
        }
      }),
    );
    const elapsed = performance.now() - started;
    return { requests, rps: Math.round((requests / elapsed) * 1000), meanMs: Math.round((elapsed / (requests / CHAINS)) * 100) / 100 };
  } finally {
    await setup.close();
  }
}

async function joseSigning(): Promise<{ perSecond: number; meanUs: number }> {
  const { privateKey } = await generateKeyPair('ES256');
  const claims = { client_id: 'c', scope: 'mcp', tsid: 'x'.repeat(43), name: 'Alice Example', email: 'alice@example.com' };
  const sign = () => new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: 'k', typ: 'at+jwt' }).setIssuer('http://127.0.0.1:1').setSubject('alice').setAudience('http://127.0.0.1:1/mcp').setIssuedAt().setExpirationTime('1h').setJti(randomBytes(16).toString('base64url')).sign(privateKey);
  for (let i = 0; i < 200; i++) await sign();
  let count = 0;
  const started = performance.now();
  while (performance.now() - started < 2000) {
    await sign();
    count++;
  }
  const elapsed = performance.now() - started;
  return { perSecond: Math.round((count / elapsed) * 1000), meanUs: Math.round((elapsed / count) * 1000 * 10) / 10 };
}

async function tokenRead(store: LoginStore): Promise<{ meanUs: number }> {
  const log = pino({ level: 'silent' });
  await store.putTokens('attempt', 'corp', { accessToken: 'a'.repeat(40), refreshToken: 'r', expiresAt: Date.now() + 3_600_000, scope: 'repo' });
  await store.keepTokens('attempt', 'tsid-bench', { sub: 'alice' });
  const access = new UpstreamTokenAccess(store, [], new MemoryRefreshLock(), log);
  for (let i = 0; i < 2000; i++) await access.accessToken('tsid-bench', 'corp');
  const calls = 20_000;
  const started = performance.now();
  for (let i = 0; i < calls; i++) await access.accessToken('tsid-bench', 'corp');
  return { meanUs: Math.round(((performance.now() - started) / calls) * 1000 * 100) / 100 };
}

const signing = await joseSigning();
const refresh = await refreshThroughput();
const memory = await tokenRead(new MemoryLoginStore(3_600_000, LEGS));
const redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
let redisRead: { meanUs: number } | { skipped: string };
try {
  await redis.connect();
  redisRead = await tokenRead(new RedisLoginStore(redis, `gatehouse-bench:${randomBytes(4).toString('hex')}:`, 3_600_000, false, LEGS));
} catch (err) {
  redisRead = { skipped: `Redis at 127.0.0.1:6379: ${(err as Error).message}` };
} finally {
  redis.disconnect();
}
const report = {
  date: new Date().toISOString(),
  node: process.version,
  tokenEndpoint: { grant: 'refresh_token', chains: CHAINS, seconds: SECONDS, ...refresh },
  joseSignES256: signing,
  /** Refresh grants per second through the gateway ÷ raw ES256 signatures per second. */
  throughputVsJoseSign: Math.round((refresh.rps / signing.perSecond) * 1000) / 1000,
  upstreamTokenRead: { memory, redis: redisRead },
};
writeFileSync(join(RESULTS_DIR, 'auth-server.json'), JSON.stringify(report, null, 2) + '\n');
console.log(JSON.stringify(report, null, 2));
