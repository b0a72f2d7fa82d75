/**
 * Aggregated sessions in Redis, shared by every gateway process that uses the same Redis and
 * key prefix. One key per session, `<keyPrefix>vmcp:session:<id>`, holding the record as JSON,
 * with a sliding time to live: `save` sets it (SET ... PX), `touch` reads the record and
 * extends it in one atomic command (GETEX ... PX, Redis >= 6.2).
 *
 * A stored value that is not a valid v2 record for that id (corrupt, written by something else,
 * or by a future format) is treated as absent: `touch` logs it and returns null; it is left to
 * expire (GETEX gave it the session TTL).
 *
 * When Redis cannot answer (down, a Sentinel failover under way, a command timed out) every
 * operation rejects with a 503 `not_ready` GatewayError with `Retry-After: 1` ("the session
 * storage cannot be reached; try again shortly"), the Redis error kept as its logged detail.
 * The client's session is not lost: it is there again once Redis is (any other error would be
 * the generic 500, which no client takes for "try again").
 *
 * Ownership: the caller owns `client` (created with `createRedisClient`) and closes it;
 * `close()` here does nothing, so one client can serve several stores.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { GatewayError } from '../../base/errors.ts';
import type { Logger } from '../../observe/log.ts';
import { ownerKey, sessionTag, type CreateOutcome, type SessionOwner, type SessionRecord, type SessionStore } from './session-store.ts';

export interface RedisSessionStoreOptions {
  /** Sliding time to live of a session, in ms (a positive integer). */
  readonly ttlMs: number;
  /** Most sessions of one owner (default: no bound); a new one beyond it ends the owner's oldest. */
  readonly maxPerOwner?: number;
  /** Most bytes of one owner's stored records (default: no bound); a new session beyond it ends the owner's oldest. */
  readonly maxBytesPerOwner?: number;
  /** Prefix of every key (`RedisConnectionConfig.keyPrefix`, e.g. `gatehouse:`). */
  readonly keyPrefix: string;
  /** Where corrupt records are reported (default: not reported). */
  readonly log?: Logger;
}

/** Session ids are what clients send as Mcp-Session-Id: visible ASCII, bounded. */
const SESSION_ID = /^[\x21-\x7E]{1,256}$/;

const record = z.object({
  v: z.literal(2),
  id: z.string(),
  owner: z.object({ issuer: z.string().nullable(), subject: z.string() }).nullable(),
  createdAt: z.number(),
  protocolVersion: z.string(),
  clientInfo: z.unknown(),
  clientCapabilities: z.record(z.string(), z.unknown()),
  backends: z.record(
    z.string(),
    z.object({
      sessionId: z.string().nullable(),
      protocolVersion: z.string(),
      capabilities: z.record(z.string(), z.unknown()),
    }),
  ),
  missing: z.array(z.string()),
  logLevel: z.string().optional(),
  modern: z.literal(true).optional(),
});

/** Parses and checks a stored value: the record, or why it is not one (never throws). */
function parseSessionRecord(id: string, raw: string): SessionRecord | { invalid: string } {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { invalid: 'not JSON' };
  }
  const parsed = record.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { invalid: issue === undefined ? 'not a session record' : `${issue.path.join('.') || '(root)'}: ${issue.message}` };
  }
  if (parsed.data.id !== id) return { invalid: 'record of another session id' };
  return parsed.data;
}

/**
 * Saves a new session of an owner and keeps the owner's index: a sorted set of its session ids by
 * creation time (Redis's own clock, so replicas' clocks do not matter). The index lives as long
 * as any of the owner's sessions is used (`touch` extends it too), so it cannot expire under
 * sessions that are still alive. Ids whose session expired are dropped from it; beyond the
 * maximum count, or the maximum bytes (the sum of the stored records' lengths), the oldest
 * sessions (never the one being saved) are deleted and returned, all in one atomic step, so
 * concurrent initializes on several replicas cannot exceed the bounds.
 *   KEYS[1] session key, KEYS[2] owner index key
 *   ARGV[1] record JSON, ARGV[2] ttl ms, ARGV[3] session id, ARGV[4] max, ARGV[5] session key prefix,
 *   ARGV[6] max bytes
 */
const SAVE_OWNED_STEPS = `
pcall(redis.replicate_commands)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], 'NX', now, ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
local bytes = 0
for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local size = redis.call('STRLEN', ARGV[5] .. id)
  if size == 0 then redis.call('ZREM', KEYS[2], id) else bytes = bytes + size end
end
local removed = {}
while redis.call('ZCARD', KEYS[2]) > tonumber(ARGV[4]) or bytes > tonumber(ARGV[6]) do
  local oldest = nil
  for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, 1)) do
    if id ~= ARGV[3] then oldest = id break end
  end
  if oldest == nil then break end
  redis.call('ZREM', KEYS[2], oldest)
  local value = redis.call('GET', ARGV[5] .. oldest)
  redis.call('DEL', ARGV[5] .. oldest)
  if value then
    bytes = bytes - string.len(value)
    table.insert(removed, value)
  end
end
`;
const SAVE_OWNED = SAVE_OWNED_STEPS + 'return removed\n';

/**
 * `create` of an owned session: as SAVE_OWNED when no session has the id, else nothing written.
 * Returns {1, removed...} when it saved, {0, the stored value} when one was there.
 */
const CREATE_OWNED = `
local existing = redis.call('GET', KEYS[1])
if existing then return {0, existing} end
` + SAVE_OWNED_STEPS + `
local out = {1}
for _, value in ipairs(removed) do table.insert(out, value) end
return out
`;

/** `create` of a session without an owner. KEYS[1] session key; ARGV[1] record JSON, ARGV[2] ttl ms. */
const CREATE_PLAIN = `
local existing = redis.call('GET', KEYS[1])
if existing then return {0, existing} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {1}
`;

/** Seconds a client is told to wait when Redis cannot answer (a Sentinel failover takes a few). */
const RETRY_AFTER_SECONDS = 1;

/** What a request gets when Redis cannot answer: retryable, with what Redis said kept for the log. */
function storageUnavailable(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError('not_ready', 'the session storage cannot be reached; try again shortly', {
    detail: `session store: ${err instanceof Error ? err.message : String(err)}`,
    headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
    cause: err,
  });
}

/** `command`'s result; a Redis failure as storageUnavailable. */
async function redis<T>(command: () => Promise<T>): Promise<T> {
  try {
    return await command();
  } catch (err) {
    throw storageUnavailable(err);
  }
}

export class RedisSessionStore implements SessionStore {
  readonly #client: Redis;
  readonly #ttlMs: number;
  readonly #keyPrefix: string;
  readonly #maxPerOwner: number;
  readonly #maxBytesPerOwner: number;
  readonly #log: Logger | null;

  constructor(client: Redis, options: RedisSessionStoreOptions) {
    if (!Number.isSafeInteger(options.ttlMs) || options.ttlMs <= 0) {
      throw new Error(`RedisSessionStore: ttlMs must be a positive whole number of milliseconds (got ${options.ttlMs})`);
    }
    const maxPerOwner = options.maxPerOwner ?? Number.MAX_SAFE_INTEGER;
    if (!Number.isSafeInteger(maxPerOwner) || maxPerOwner <= 0) throw new Error(`RedisSessionStore: maxPerOwner must be a positive whole number (got ${maxPerOwner})`);
    const maxBytesPerOwner = options.maxBytesPerOwner ?? Number.MAX_SAFE_INTEGER;
    if (!Number.isSafeInteger(maxBytesPerOwner) || maxBytesPerOwner <= 0) throw new Error(`RedisSessionStore: maxBytesPerOwner must be a positive whole number (got ${maxBytesPerOwner})`);
    this.#maxBytesPerOwner = maxBytesPerOwner;
    this.#client = client;
    this.#ttlMs = options.ttlMs;
    this.#keyPrefix = options.keyPrefix;
    this.#maxPerOwner = maxPerOwner;
    this.#log = options.log ?? null;
  }

  /** The Redis key of a session. */
  key(id: string): string {
    return `${this.#keyPrefix}vmcp:session:${id}`;
  }

  /** The Redis key of an owner's index of sessions (a digest: owners are not spelled out in key names). */
  ownerIndexKey(owner: SessionOwner): string {
    return `${this.#keyPrefix}vmcp:owner:${createHash('sha256').update(ownerKey(owner)).digest('base64url')}`;
  }

  async touch(id: string, caller: SessionOwner | null = null): Promise<SessionRecord | null> {
    if (!SESSION_ID.test(id)) return null;
    const raw = await redis(async () => {
      if (caller === null) return this.#client.getex(this.key(id), 'PX', this.#ttlMs);
      // One round trip: the session's TTL and the caller's session index's TTL slide together.
      const replies = await this.#client.pipeline().getex(this.key(id), 'PX', this.#ttlMs).pexpire(this.ownerIndexKey(caller), this.#ttlMs).exec();
      const [failure, value] = replies?.[0] ?? [new Error('no reply'), null];
      if (failure) throw failure;
      return value as string | null;
    });
    if (raw === null) return null;
    const parsed = parseSessionRecord(id, raw);
    if ('invalid' in parsed) {
      // A digest of the id: a full session id lets its holder use the session.
      this.#log?.warn({ session: sessionTag(id), reason: parsed.invalid }, 'ignoring a stored session that is not a valid session record');
      return null;
    }
    return parsed;
  }

  async save(session: SessionRecord): Promise<readonly SessionRecord[]> {
    if (!SESSION_ID.test(session.id)) {
      throw new Error(`RedisSessionStore: session id must be 1-256 visible ASCII characters (got ${JSON.stringify(session.id.slice(0, 64))})`);
    }
    const owner = session.owner;
    if (owner === null) {
      await redis(() => this.#client.set(this.key(session.id), JSON.stringify(session), 'PX', this.#ttlMs));
      return [];
    }
    const removed = (await redis(() =>
      this.#client.eval(SAVE_OWNED, 2, this.key(session.id), this.ownerIndexKey(owner), JSON.stringify(session), this.#ttlMs, session.id, this.#maxPerOwner, this.key(''), this.#maxBytesPerOwner),
    )) as string[];
    return this.#records(removed);
  }

  /** The records among stored values (an owner's sessions a save ended); values that are not one are left out. */
  #records(removed: readonly string[]): SessionRecord[] {
    const records: SessionRecord[] = [];
    for (const raw of removed) {
      let id: unknown;
      try {
        id = (JSON.parse(raw) as { id?: unknown }).id;
      } catch {
        continue;
      }
      const parsed = typeof id === 'string' ? parseSessionRecord(id, raw) : { invalid: 'no id' };
      if (!('invalid' in parsed)) records.push(parsed);
    }
    return records;
  }

  async create(session: SessionRecord): Promise<CreateOutcome> {
    if (!SESSION_ID.test(session.id)) {
      throw new Error(`RedisSessionStore: session id must be 1-256 visible ASCII characters (got ${JSON.stringify(session.id.slice(0, 64))})`);
    }
    const json = JSON.stringify(session);
    const owner = session.owner;
    const reply = (await redis(() =>
      owner === null
        ? this.#client.eval(CREATE_PLAIN, 1, this.key(session.id), json, this.#ttlMs)
        : this.#client.eval(CREATE_OWNED, 2, this.key(session.id), this.ownerIndexKey(owner), json, this.#ttlMs, session.id, this.#maxPerOwner, this.key(''), this.#maxBytesPerOwner),
    )) as [number, ...string[]];
    if (reply[0] === 1) return { created: true, ended: this.#records(reply.slice(1) as string[]) };
    const existing = parseSessionRecord(session.id, reply[1] as string);
    if (!('invalid' in existing)) return { created: false, existing };
    // What is stored under the id is not a session: it is replaced, as save would.
    this.#log?.warn({ session: sessionTag(session.id), reason: existing.invalid }, 'replacing a stored session that is not a valid session record');
    return { created: true, ended: await this.save(session) };
  }

  async update(session: SessionRecord): Promise<boolean> {
    if (!SESSION_ID.test(session.id)) return false;
    return (await redis(() => this.#client.set(this.key(session.id), JSON.stringify(session), 'PX', this.#ttlMs, 'XX'))) === 'OK';
  }

  async delete(id: string): Promise<void> {
    if (!SESSION_ID.test(id)) return;
    await redis(() => this.#client.del(this.key(id)));
  }

  /** Does nothing: the caller owns the client. */
  async close(): Promise<void> {}
}
