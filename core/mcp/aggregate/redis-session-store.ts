/**
 * Aggregated sessions in Redis, shared by every gateway process that uses the same Redis and
 * key prefix. One key per session, `<keyPrefix>vmcp:session:<id>`, holding the record as JSON,
 * with a sliding time to live: `save` sets it (SET ... PX), `touch` reads the record and
 * extends it in one atomic command (GETEX ... PX, Redis >= 6.2).
 *
 * A stored value that is not a valid v1 record for that id (corrupt, written by something else,
 * or by a future format) is treated as absent: `touch` logs it and returns null; it is left to
 * expire (GETEX gave it the session TTL). Connection errors and timeouts do propagate: the
 * endpoint decides how to answer when the store is unreachable.
 *
 * Ownership: the caller owns `client` (created with `createRedisClient`) and closes it;
 * `close()` here does nothing, so one client can serve several stores.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { Logger } from '../../observe/log.ts';
import type { SessionRecord, SessionStore } from './session-store.ts';

export interface RedisSessionStoreOptions {
  /** Sliding time to live of a session, in ms (a positive integer). */
  readonly ttlMs: number;
  /** Prefix of every key (`RedisConnectionConfig.keyPrefix`, e.g. `gatehouse:`). */
  readonly keyPrefix: string;
  /** Where corrupt records are reported (default: not reported). */
  readonly log?: Logger;
}

/** Session ids are what clients send as Mcp-Session-Id: visible ASCII, bounded. */
const SESSION_ID = /^[\x21-\x7E]{1,256}$/;

const record = z.object({
  v: z.literal(1),
  id: z.string(),
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
});

/** Parses and checks a stored value: the record, or why it is not one (never throws). */
export function parseSessionRecord(id: string, raw: string): SessionRecord | { invalid: string } {
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

export class RedisSessionStore implements SessionStore {
  readonly #client: Redis;
  readonly #ttlMs: number;
  readonly #keyPrefix: string;
  readonly #log: Logger | null;

  constructor(client: Redis, options: RedisSessionStoreOptions) {
    if (!Number.isSafeInteger(options.ttlMs) || options.ttlMs <= 0) {
      throw new Error(`RedisSessionStore: ttlMs must be a positive whole number of milliseconds (got ${options.ttlMs})`);
    }
    this.#client = client;
    this.#ttlMs = options.ttlMs;
    this.#keyPrefix = options.keyPrefix;
    this.#log = options.log ?? null;
  }

  /** The Redis key of a session. */
  key(id: string): string {
    return `${this.#keyPrefix}vmcp:session:${id}`;
  }

  async touch(id: string): Promise<SessionRecord | null> {
    if (!SESSION_ID.test(id)) return null;
    const raw = await this.#client.getex(this.key(id), 'PX', this.#ttlMs);
    if (raw === null) return null;
    const parsed = parseSessionRecord(id, raw);
    if ('invalid' in parsed) {
      // Only a prefix of the id: a full session id lets its holder use the session.
      this.#log?.warn({ session: `${id.slice(0, 8)}…`, reason: parsed.invalid }, 'ignoring a stored session that is not a valid session record');
      return null;
    }
    return parsed;
  }

  async save(session: SessionRecord): Promise<void> {
    if (!SESSION_ID.test(session.id)) {
      throw new Error(`RedisSessionStore: session id must be 1-256 visible ASCII characters (got ${JSON.stringify(session.id.slice(0, 64))})`);
    }
    await this.#client.set(this.key(session.id), JSON.stringify(session), 'PX', this.#ttlMs);
  }

  async delete(id: string): Promise<void> {
    if (!SESSION_ID.test(id)) return;
    await this.#client.del(this.key(id));
  }

  /** Does nothing: the caller owns the client. */
  async close(): Promise<void> {}
}
