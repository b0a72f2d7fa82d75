/**
 * Floods of the embedded authorization server from one client address, on
 * memory and on Redis storage (127.0.0.1:6379), with a victim's sign-in in progress from another
 * address throughout:
 *
 *  1. FLOOD_GETS GETs of one interaction (/oauth/interaction/:uid, each would store a leg), with
 *     the default budgets, then LIFTED_GETS with the login budget lifted (what the store bound does);
 *  2. FLOOD_REGISTRATIONS registrations with the default budgets, then LIFTED_REGISTRATIONS with
 *     the registration budget lifted and maxClients at MAX_CLIENTS.
 *
 * For each: the statuses, the time, the heap and RSS of this process (gateway and load generator
 * both) before and after, the Redis keys of the server, and whether the victim's sign-in then
 * completes. `node --expose-gc --import tsx bench/plugins/auth-floods.ts`; results in
 * results/auth-floods.json. Loopback only; every loop is bounded.
 */
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { DEFAULT_AUTH_SERVER_RATE_LIMITS } from '../../core/config/auth-server-limits.ts';
import type { AuthServerConfig } from '../../core/config/vmcp-types.ts';
import { Browser } from '../../test/auth-server/helpers/browser.ts';
import { startAuthGateway, type AuthGateway } from '../../test/auth-server/helpers/setup.ts';
import { RESULTS_DIR } from '../load/harness.ts';

const FLOOD_GETS = Number(process.env['FLOOD_GETS'] ?? 100_000);
const FLOOD_REGISTRATIONS = Number(process.env['FLOOD_REGISTRATIONS'] ?? 100_000);
const LIFTED_GETS = 20_000;
const LIFTED_REGISTRATIONS = 20_000;
const MAX_CLIENTS = 5_000;
const CONCURRENCY = 64;
const REDIRECT = 'http://127.0.0.1:7790/callback';
const TRUSTED = '  server:\n    trustedProxies: ["127.0.0.1", "::1"]';
const lifted = { perKey: { maxTokens: 10_000_000, refillPeriodMs: 60_000 }, shared: { maxTokens: 10_000_000, refillPeriodMs: 60_000 } };

const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const mib = (bytes: number): number => Math.round((bytes / 1048576) * 10) / 10;

function memory(): { heapMiB: number; rssMiB: number } {
  gc();
  gc();
  const { heapUsed, rss } = process.memoryUsage();
  return { heapMiB: mib(heapUsed), rssMiB: mib(rss) };
}

/** Sends `n` requests made by `request`, CONCURRENCY at a time: the count of each status and the seconds taken. */
async function flood(n: number, request: () => Promise<Response>): Promise<{ statuses: Record<string, number>; seconds: number }> {
  const statuses: Record<string, number> = {};
  let sent = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (sent < n) {
        sent++;
        const res = await request().catch(() => null);
        const status = res === null ? 'error' : String(res.status);
        await res?.arrayBuffer().catch(() => undefined);
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
    }),
  );
  return { statuses, seconds: Math.round((performance.now() - started) / 100) / 10 };
}

async function redisKeys(admin: Redis | null, prefix: string): Promise<Record<string, number> | null> {
  if (admin === null) return null;
  const counts: Record<string, number> = {};
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    for (const key of keys) {
      const kind = key.slice(prefix.length).split(':').slice(0, 2).join(':');
      counts[kind] = (counts[kind] ?? 0) + 1;
    }
    cursor = next;
  } while (cursor !== '0');
  return counts;
}

function authorizeUrl(setup: AuthGateway, client: string, challenge: string): string {
  return `${setup.issuer}/oauth/authorize?${new URLSearchParams({ client_id: client, response_type: 'code', redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256' })}`;
}

async function register(setup: AuthGateway, address: string): Promise<Response> {
  return fetch(`${setup.issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': address }, body: JSON.stringify({ redirect_uris: [REDIRECT] }) });
}

/** A victim's sign-in left waiting at the provider, and how to finish it (true: the client got a code). */
async function victimInProgress(setup: AuthGateway): Promise<() => Promise<boolean>> {
  const client = ((await (await register(setup, '198.51.100.10')).json()) as { client_id: string }).client_id;
  const browser = new Browser({ 'x-forwarded-for': '198.51.100.10' });
  const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
  const atProvider = await browser.visit(authorizeUrl(setup, client, challenge), (url) => url.href.startsWith(setup.corp.issuer));
  return async () => {
    const done = await browser.visit(atProvider.url.href, (url) => url.href.startsWith(REDIRECT));
    return done.url.searchParams.get('code') !== null;
  };
}

async function interactionFlood(storage: 'memory' | 'redis', rateLimiting: AuthServerConfig['rateLimiting'], n: number): Promise<Record<string, unknown>> {
  const prefix = `gatehouse-flood:${randomBytes(4).toString('hex')}:`;
  const admin = storage === 'redis' ? new Redis({ host: '127.0.0.1', port: 6379 }) : null;
  const setup = await startAuthGateway({
    spec: TRUSTED,
    bounds: { rateLimiting },
    ...(storage === 'redis' ? { storage: { type: 'redis', sentinel: null, address: '127.0.0.1:6379', username: null, password: null, db: 0, keyPrefix: prefix } } : {}),
  });
  try {
    const finishVictim = await victimInProgress(setup);
    const attacker = new Browser({ 'x-forwarded-for': '203.0.113.66' });
    const client = ((await (await register(setup, '203.0.113.66')).json()) as { client_id: string }).client_id;
    const opened = await attacker.visit(authorizeUrl(setup, client, 'x'.repeat(43)), (url) => url.pathname.startsWith('/oauth/interaction/'));
    // The interaction's cookie, as the attacker's browser holds it.
    const cookie = attacker.cookieHeader(opened.url);
    const before = memory();
    const keysBefore = await redisKeys(admin, prefix);
    const result = await flood(n, () => fetch(opened.url.href, { redirect: 'manual', headers: { 'x-forwarded-for': '203.0.113.66', cookie } }));
    const after = memory();
    const keysAfter = await redisKeys(admin, prefix);
    return { storage, requests: n, ...result, memoryBefore: before, memoryAfter: after, redisKeysBefore: keysBefore, redisKeysAfter: keysAfter, victimCompleted: await finishVictim() };
  } finally {
    await setup.close();
    if (admin !== null) {
      const keys = await admin.keys(`${prefix}*`);
      if (keys.length > 0) await admin.del(...keys);
      admin.disconnect();
    }
  }
}

async function registrationFlood(storage: 'memory' | 'redis', rateLimiting: AuthServerConfig['rateLimiting'], n: number, maxClients: number): Promise<Record<string, unknown>> {
  const prefix = `gatehouse-flood:${randomBytes(4).toString('hex')}:`;
  const admin = storage === 'redis' ? new Redis({ host: '127.0.0.1', port: 6379 }) : null;
  const setup = await startAuthGateway({
    spec: TRUSTED,
    bounds: { rateLimiting, maxClients },
    ...(storage === 'redis' ? { storage: { type: 'redis', sentinel: null, address: '127.0.0.1:6379', username: null, password: null, db: 0, keyPrefix: prefix } } : {}),
  });
  try {
    const finishVictim = await victimInProgress(setup);
    const before = memory();
    const result = await flood(n, () => register(setup, '203.0.113.66'));
    const after = memory();
    return { storage, requests: n, maxClients, ...result, memoryBefore: before, memoryAfter: after, redisKeysAfter: await redisKeys(admin, prefix), victimCompleted: await finishVictim() };
  } finally {
    await setup.close();
    if (admin !== null) {
      const keys = await admin.keys(`${prefix}*`);
      if (keys.length > 0) await admin.del(...keys);
      admin.disconnect();
    }
  }
}

const scenarios: Record<string, (storage: 'memory' | 'redis') => Promise<Record<string, unknown>>> = {
  interactionGets: (storage) => interactionFlood(storage, DEFAULT_AUTH_SERVER_RATE_LIMITS, FLOOD_GETS),
  interactionGetsLoginBudgetLifted: (storage) => interactionFlood(storage, { ...DEFAULT_AUTH_SERVER_RATE_LIMITS, login: lifted }, LIFTED_GETS),
  registrations: (storage) => registrationFlood(storage, DEFAULT_AUTH_SERVER_RATE_LIMITS, FLOOD_REGISTRATIONS, 100_000),
  registrationsBudgetLifted: (storage) => registrationFlood(storage, { ...DEFAULT_AUTH_SERVER_RATE_LIMITS, registration: lifted }, LIFTED_REGISTRATIONS, MAX_CLIENTS),
};

// `auth-floods.ts <scenario> <memory|redis>` runs one in this process (clean memory figures) and
// prints it; without arguments each runs in a process of its own and the report is written.
const [only, onlyStorage] = process.argv.slice(2);
if (only !== undefined) {
  console.log(JSON.stringify(await scenarios[only]!(onlyStorage === 'redis' ? 'redis' : 'memory')));
  process.exit(0);
}
const report: Record<string, unknown[]> = {};
for (const name of Object.keys(scenarios)) {
  for (const storage of ['memory', 'redis']) {
    const run = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), name, storage], { encoding: 'utf8', env: process.env, timeout: 15 * 60_000 });
    const line = run.stdout.split('\n').reverse().find((l) => l.startsWith('{'));
    (report[name] ??= []).push(line === undefined ? { storage, failed: run.stderr.slice(-2000) } : JSON.parse(line));
    console.log(name, storage, line ?? run.stderr.slice(-500));
  }
}
writeFileSync(join(RESULTS_DIR, 'auth-floods.json'), JSON.stringify(report, null, 2) + '\n');
