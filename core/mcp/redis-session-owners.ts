/**
 * Transparent session bindings (session-owners.ts) shared by every gateway process on the same
 * Redis and key prefix. One key per session, `<keyPrefix>vmcp:transparent:<digest of the id>`
 * (the id lets its holder use the session: it is not spelled out in key names), holding the owner
 * as JSON, with the session TTL; and per owner an index of its bindings by age,
 * `<keyPrefix>vmcp:transparent-owner:<digest>`, which bounds how many one principal holds: a bind
 * past the maximum deletes the owner's oldest, in the same atomic step, so concurrent binds on
 * several replicas cannot exceed it. A binding is written once (SET only when absent): the owner
 * of an id never changes.
 *
 * When Redis cannot answer, `load` rejects with the session store's 503 `not_ready`
 * (Retry-After: 1): the client's session is not lost, it is there again once Redis is.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { VmcpConfig } from '../config/vmcp-types.ts';
import { GatewayError } from '../base/errors.ts';
import type { Logger } from '../observe/log.ts';
import { createRedisClient, waitReady } from '../store/redis.ts';
import { ownerKey, type SessionOwner } from './aggregate/session-store.ts';
import { SessionOwners, type SharedOwners } from './session-owners.ts';

export interface RedisSessionOwnersOptions {
  readonly ttlMs: number;
  readonly maxPerOwner: number;
  readonly keyPrefix: string;
}

/**
 * KEYS[1] binding key, KEYS[2] owner index key; ARGV[1] owner JSON, ARGV[2] ttl ms, ARGV[3] the
 * id's digest, ARGV[4] max per owner, ARGV[5] binding key prefix. Returns the stored owner when
 * the id was bound already, else nil.
 */
const BIND = `
local existing = redis.call('GET', KEYS[1])
if existing then return existing end
pcall(redis.replicate_commands)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], now, ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
for _, digest in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  if redis.call('EXISTS', ARGV[5] .. digest) == 0 then redis.call('ZREM', KEYS[2], digest) end
end
while redis.call('ZCARD', KEYS[2]) > tonumber(ARGV[4]) do
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if oldest == ARGV[3] then break end
  redis.call('ZREM', KEYS[2], oldest)
  redis.call('DEL', ARGV[5] .. oldest)
end
return false
`;

const digest = (text: string): string => createHash('sha256').update(text).digest('base64url');

function unavailable(err: unknown): GatewayError {
  return new GatewayError('not_ready', 'the session storage cannot be reached; try again shortly', {
    detail: `transparent session owners: ${err instanceof Error ? err.message : String(err)}`,
    headers: { 'retry-after': '1' },
    cause: err,
  });
}

/** A stored owner, or null for anything else (corrupt, or written by something else). */
function parseOwner(raw: string | null): SessionOwner | null {
  if (raw === null) return null;
  try {
    const value = JSON.parse(raw) as { issuer?: unknown; subject?: unknown };
    if (typeof value.subject !== 'string' || (value.issuer !== null && typeof value.issuer !== 'string')) return null;
    return { issuer: value.issuer, subject: value.subject };
  } catch {
    return null;
  }
}

export class RedisSessionOwners implements SharedOwners {
  readonly #client: Redis;
  readonly #ttlMs: number;
  readonly #maxPerOwner: number;
  readonly #prefix: string;
  readonly #indexPrefix: string;

  /** The caller owns `client` (createRedisClient) and closes it. */
  constructor(client: Redis, options: RedisSessionOwnersOptions) {
    this.#client = client;
    this.#ttlMs = options.ttlMs;
    this.#maxPerOwner = options.maxPerOwner;
    this.#prefix = `${options.keyPrefix}vmcp:transparent:`;
    this.#indexPrefix = `${options.keyPrefix}vmcp:transparent-owner:`;
  }

  /** The Redis key of `id`'s binding. */
  key(id: string): string {
    return this.#prefix + digest(id);
  }

  #indexKey(owner: SessionOwner): string {
    return this.#indexPrefix + digest(ownerKey(owner));
  }

  async load(id: string): Promise<SessionOwner | null> {
    try {
      return parseOwner(await this.#client.get(this.key(id)));
    } catch (err) {
      throw unavailable(err);
    }
  }

  async bind(id: string, owner: SessionOwner): Promise<SessionOwner | null> {
    const json = JSON.stringify({ issuer: owner.issuer, subject: owner.subject });
    const stored = (await this.#client.eval(BIND, 2, this.key(id), this.#indexKey(owner), json, this.#ttlMs, digest(id), this.#maxPerOwner, this.#prefix)) as string | null;
    return stored === null ? null : parseOwner(stored);
  }

  async refresh(id: string, owner: SessionOwner): Promise<boolean> {
    const replies = await this.#client.pipeline().pexpire(this.key(id), this.#ttlMs).pexpire(this.#indexKey(owner), this.#ttlMs).exec();
    const [err, extended] = replies?.[0] ?? [null, 1];
    if (err !== null) throw err;
    return extended === 1;
  }

  async forget(id: string, owner: SessionOwner): Promise<void> {
    await this.#client.pipeline().del(this.key(id)).zrem(this.#indexKey(owner), digest(id)).exec();
  }
}

const REDIS_READY_MS = 10_000;

/**
 * The transparent session bindings of `config.session`, created once per process and kept across
 * reloads, as the session storage is: in this process, or shared through Redis (a connection of
 * their own) when the sessions are.
 */
export async function createSessionOwners(config: VmcpConfig, log: Logger): Promise<{ readonly owners: SessionOwners; close(): Promise<void> }> {
  const { session } = config;
  const base = { maxSessions: session.maxSessions, maxPerPrincipal: session.maxSessionsPerPrincipal, ttlMs: session.ttlMs, log };
  if (session.storage.type !== 'redis') {
    const owners = new SessionOwners(base);
    return { owners, close: async () => owners.close() };
  }
  const redis = session.storage.redis;
  const client = createRedisClient(redis, log, `vmcp-${config.name}-owners`);
  try {
    await waitReady(client, REDIS_READY_MS);
  } catch (err) {
    client.disconnect();
    throw err;
  }
  const shared = new RedisSessionOwners(client, { ttlMs: session.ttlMs, maxPerOwner: session.maxSessionsPerPrincipal, keyPrefix: redis.keyPrefix });
  const owners = new SessionOwners({ ...base, shared });
  return {
    owners,
    close: async () => {
      owners.close();
      await client.quit().catch(() => client.disconnect());
    },
  };
}
