/**
 * Where the authorization server keeps what it issues when `storage` is Redis (one address or a
 * Sentinel-managed master): codes, tokens, grants, sessions, interactions and registered
 * clients survive a restart and are shared by every replica. One key per record,
 * `<prefix>oidc:<model>:<id>`, holding its JSON with the record's own expiry; a record's use
 * (`consumed`, for replay detection) is a key of its own beside it with the same expiry, so a
 * payload is never rewritten. The indexes the provider needs (by uid, by user code, the records
 * of a grant) are keys too, written in the same transaction as the record.
 *
 * When Redis cannot answer (down, a Sentinel failover under way, a command timed out) the
 * provider's request fails with 503 `temporarily_unavailable` and `Retry-After: 1`, not the
 * provider's generic 500 `server_error`: the client's client, code or refresh token may well be
 * fine, it is to try again shortly.
 *
 * A refresh token whose rotation did not complete may be retried for a short while
 * (refresh-retry.ts). Its first use also writes `<key>:rotation`, expiring with the window,
 * holding a ticket drawn from its grant's counter `<prefix>oidc:rotations:<grantId>`; a completed
 * refresh of the grant bumps the counter. The token reads as unused while its ticket is the
 * counter's value. Each step is one script, so the marks replicate with the use itself, and
 * replicas of the gateway agree (no clocks compared).
 */
import type { Redis } from 'ioredis';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import { refreshRetry, type RotationAware } from './refresh-retry.ts';
import { clientBudget, clientsFull, temporarilyUnavailable } from './store-errors.ts';

/** Sets the "consumed" mark of a record with the record's remaining lifetime (nothing when it is gone). */
const CONSUME = `
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then return 0 end
if ttl == -1 then redis.call('SET', KEYS[2], ARGV[1]) else redis.call('SET', KEYS[2], ARGV[1], 'PX', ttl) end
return 1`;

/**
 * A refresh token's use: the consumed mark as CONSUME, and its rotation ticket (see the top):
 * a new ticket from the grant's counter (which lives at least the window from now), kept in
 * `:rotation` with the window of the first use (a retry keeps that deadline).
 * KEYS: record, consumed mark, rotation mark; ARGV: now (s), window (ms), counter key prefix.
 * The counter's key is named from the record's grantId (not in KEYS: no Redis Cluster here).
 */
const CONSUME_REFRESH = `
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then return 0 end
if ttl == -1 then redis.call('SET', KEYS[2], ARGV[1]) else redis.call('SET', KEYS[2], ARGV[1], 'PX', ttl) end
local ok, payload = pcall(cjson.decode, redis.call('GET', KEYS[1]))
if not ok or type(payload) ~= 'table' or type(payload.grantId) ~= 'string' then return 1 end
local counter = ARGV[3] .. payload.grantId
local ticket = redis.call('INCR', counter)
local window = tonumber(ARGV[2])
if redis.call('PTTL', counter) < window then redis.call('PEXPIRE', counter, window) end
if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('SET', KEYS[3], ticket, 'KEEPTTL') else redis.call('SET', KEYS[3], ticket, 'PX', window) end
return 1`;

/**
 * A refresh token: its record, and its consumed mark unless its rotation may be retried (its
 * ticket is still its grant's counter). KEYS: record, consumed mark, rotation mark; ARGV: counter
 * key prefix. Answers [record or nil, consumed mark or nil].
 */
const FIND_REFRESH = `
local raw = redis.call('GET', KEYS[1])
if not raw then return {} end
local consumed = redis.call('GET', KEYS[2])
if not consumed then return {raw} end
local ticket = redis.call('GET', KEYS[3])
if ticket then
  local ok, payload = pcall(cjson.decode, raw)
  if ok and type(payload) == 'table' and type(payload.grantId) == 'string' and redis.call('GET', ARGV[1] .. payload.grantId) == ticket then return {raw} end
end
return {raw, consumed}`;

/** A refresh of a grant completed: its counter moves on, so no earlier ticket matches (nothing when no use is pending). */
const ROTATED = `
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('INCR', KEYS[1]) end
return 1`;

/**
 * Registers a client within the budget (store-errors.ts). Two sorted sets beside the clients:
 * `clients:all` (each live client, scored by when its idle time ends) and `clients:unused` (those
 * no user granted yet, scored by when they registered). When the budget is full the oldest unused
 * client past the grace is deleted for the new one; none: 'full'. Entries of clients that expired
 * meanwhile are dropped on the way (and a few at each registration, so the set does not grow).
 * KEYS: the client, all, unused; ARGV: id, JSON, idle (s), max, grace (ms), the clients' key prefix.
 */
const REGISTER_CLIENT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local idle = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local added = not redis.call('ZSCORE', KEYS[2], ARGV[1])
local function dropGone(limit, before)
  local oldest = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', before, 'LIMIT', 0, limit)
  for _, id in ipairs(oldest) do
    if redis.call('ZSCORE', KEYS[2], id) then return id end
    redis.call('ZREM', KEYS[3], id)
  end
  return nil
end
dropGone(4, '+inf')
if added and redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then
  local victim = nil
  for _ = 1, 25 do
    victim = dropGone(4, now - tonumber(ARGV[5]))
    if victim or #redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now - tonumber(ARGV[5]), 'LIMIT', 0, 1) == 0 then break end
  end
  if not victim then return 'full' end
  redis.call('DEL', ARGV[6] .. victim)
  redis.call('ZREM', KEYS[2], victim)
  redis.call('ZREM', KEYS[3], victim)
end
redis.call('SET', KEYS[1], ARGV[2], 'EX', idle)
redis.call('ZADD', KEYS[2], now + idle * 1000, ARGV[1])
redis.call('PEXPIRE', KEYS[2], idle * 1000)
if added then
  redis.call('ZADD', KEYS[3], now, ARGV[1])
  redis.call('PEXPIRE', KEYS[3], idle * 1000)
end
return 'ok'`;

/** A client's use: its record with its idle time started again, in the set of all too. KEYS: the client, all; ARGV: id, idle (s). */
const FIND_CLIENT = `
local raw = redis.call('GETEX', KEYS[1], 'EX', ARGV[2])
if not raw then return false end
local t = redis.call('TIME')
redis.call('ZADD', KEYS[2], 'XX', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[2]) * 1000, ARGV[1])
return raw`;

/** Deletes every record of a grant, their marks, and the grant's index. */
const REVOKE = `
local keys = redis.call('SMEMBERS', KEYS[1])
for _, key in ipairs(keys) do redis.call('DEL', key, key .. ':consumed', key .. ':rotation') end
redis.call('DEL', KEYS[1])
return #keys`;

/**
 * With Sentinel there are replicas: a write is answered once one of them has it too (WAIT, up to
 * REPLICATION_WAIT_MS), so a failover right after loses nothing the provider acknowledged.
 * Best effort: past the wait the write stands on the master alone.
 *
 * WAIT holds the connection it is sent on, and every command of the server (the reads of
 * upstream tokens on each proxied call too) shares one. So:
 * - it is sent only while the master has a replica online (INFO replication, asked again at most
 *   every REPLICAS_RECHECK_MS and after every reconnect, which may have landed on another node).
 *   A master without one (the replica just promoted by a failover, until a new replica syncs)
 *   would hold the connection for the whole wait on every write, for nothing: the commands
 *   queued behind the waits timed out, and requests failed for as long as writes kept coming. A
 *   wait that no replica answered in time counts as none online until the next check;
 * - one WAIT at a time: it covers every write sent on the connection before it, so the writes
 *   that come meanwhile share the next one. Concurrent writes each sending its own would hold
 *   the connection a second each when the replica has just gone.
 * A user whom ACLs refuse INFO waits as before, and after a wait that no replica answered skips
 * waits for NO_INFO_RECHECK_MS.
 */
export const REPLICATION_WAIT_MS = 1_000;
const REPLICAS_RECHECK_MS = 1_000;
const NO_INFO_RECHECK_MS = 5_000;

interface Replication {
  /** Replicas online at the master this client is connected to (null: not known). */
  online: number | null;
  checkedAt: number;
  /** The INFO under way, which concurrent writes share. */
  asking: Promise<void> | null;
  /** INFO is refused to this user. */
  noInfo: boolean;
  /** Writes issued through `durably` on this client so far: a write's ticket is its number. */
  issued: number;
  /** The WAIT in flight and the last ticket it covers (the writes issued before it). */
  waiting: { readonly covers: number; readonly acked: Promise<number> } | null;
}

const replications = new WeakMap<Redis, Replication>();

function replicationOf(client: Redis): Replication {
  let state = replications.get(client);
  if (state === undefined) {
    const created: Replication = { online: null, checkedAt: 0, asking: null, noInfo: false, issued: 0, waiting: null };
    client.on('ready', () => {
      created.online = null;
    });
    replications.set(client, (state = created));
  }
  return state;
}

/** Replicas online (INFO, shared by concurrent writes), unless what is known is fresh. */
async function onlineReplicas(client: Redis, state: Replication): Promise<number> {
  if (state.online !== null && Date.now() - state.checkedAt < (state.noInfo ? NO_INFO_RECHECK_MS : REPLICAS_RECHECK_MS)) return state.online;
  if (state.noInfo) return 1;
  state.asking ??= client
    .info('replication')
    .then(
      (info) => {
        state.online = (info.match(/^slave\d+:[^\r\n]*state=online/gm) ?? []).length;
        state.checkedAt = Date.now();
      },
      (err: Error) => {
        if (!/NOPERM/.test(err.message)) throw err;
        state.noInfo = true;
      },
    )
    .finally(() => {
      state.asking = null;
    });
  await state.asking;
  return state.online ?? 1;
}

/**
 * Issues `write` (commands sent when it is called) and answers its result once a replica has
 * it, when `durable` and the master has one online (see above).
 */
export async function durably<T>(client: Redis, durable: boolean, write: () => Promise<T>): Promise<T> {
  if (!durable) return write();
  const state = replicationOf(client);
  // Taken as the write is issued: ioredis sends a client's commands in the order they are issued.
  const ticket = ++state.issued;
  const result = await write();
  for (;;) {
    if ((await onlineReplicas(client, state)) === 0) return result;
    const inFlight = state.waiting;
    if (inFlight === null) break;
    if (inFlight.covers >= ticket) {
      await inFlight.acked;
      return result;
    }
    // Sent before this write, so it does not cover it: the next one does (one for all waiting).
    await inFlight.acked.catch(() => undefined);
  }
  const entry = { covers: state.issued, acked: client.wait(1, REPLICATION_WAIT_MS) };
  state.waiting = entry;
  try {
    if ((await entry.acked) === 0) [state.online, state.checkedAt] = [0, Date.now()];
  } finally {
    if (state.waiting === entry) state.waiting = null;
  }
  return result;
}

/** Seconds a client is told to wait when Redis cannot answer (a Sentinel failover takes a few). */
const RETRY_AFTER_SECONDS = 1;

/** A Redis failure as the provider answers it: 503 temporarily_unavailable with Retry-After (store-errors.ts). */
function storageUnavailable(err: unknown): Promise<Error> {
  return temporarilyUnavailable("the authorization server's storage cannot be reached; try again shortly", RETRY_AFTER_SECONDS, err);
}

/** `command`'s result; a Redis failure as storageUnavailable (for what the provider reads or writes). */
export async function storage<T>(command: () => Promise<T>): Promise<T> {
  try {
    return await command();
  } catch (err) {
    throw await storageUnavailable(err);
  }
}

export interface RedisClientBudget {
  /** Seconds a registered client is kept unused (each use starts it again). */
  readonly clientIdleSeconds: number;
  /** Registered clients kept at most. */
  readonly maxClients: number;
}

export class RedisAdapter implements Adapter, RotationAware {
  readonly #client: Redis;
  readonly #prefix: string;
  readonly #model: string;
  readonly #durable: boolean;
  /** Registered clients: seconds they are kept unused (each use starts it again); null for other models. */
  readonly #idleSeconds: number | null;
  readonly #maxClients: number;

  constructor(client: Redis, keyPrefix: string, model: string, durable: boolean, clients: RedisClientBudget) {
    this.#client = client;
    this.#prefix = `${keyPrefix}oidc:`;
    this.#model = model;
    this.#durable = durable;
    this.#idleSeconds = model === 'Client' ? clients.clientIdleSeconds : null;
    this.#maxClients = clients.maxClients;
  }

  /** The sets of the client budget (see REGISTER_CLIENT). */
  get #allClients(): string {
    return `${this.#prefix}clients:all`;
  }

  get #unusedClients(): string {
    return `${this.#prefix}clients:unused`;
  }

  /** Prefix of the grants' rotation counters (see the top). */
  get #rotations(): string {
    return `${this.#prefix}rotations:`;
  }

  #key(id: string): string {
    return `${this.#prefix}${this.#model}:${id}`;
  }

  async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    const key = this.#key(id);
    if (this.#idleSeconds !== null) {
      const idle = this.#idleSeconds;
      const answer = await storage(() =>
        durably(this.#client, this.#durable, () =>
          this.#client.eval(REGISTER_CLIENT, 3, key, this.#allClients, this.#unusedClients, id, JSON.stringify(payload), String(idle), String(this.#maxClients), String(clientBudget.unusedGraceMs), this.#key('')),
        ),
      );
      if (answer === 'full') throw await clientsFull(this.#maxClients);
      return;
    }
    const tx = this.#client.multi();
    // A grant made for a client: it was used, and is no longer one that may make room.
    if (this.#model === 'Grant' && typeof payload.clientId === 'string') tx.zrem(this.#unusedClients, payload.clientId);
    const ttl = expiresIn !== undefined && expiresIn > 0 ? expiresIn : this.#idleSeconds;
    if (ttl === null) tx.set(key, JSON.stringify(payload));
    else tx.set(key, JSON.stringify(payload), 'EX', ttl);
    if (payload.uid !== undefined) {
      if (ttl === null) tx.set(`${this.#prefix}uid:${payload.uid}`, id);
      else tx.set(`${this.#prefix}uid:${payload.uid}`, id, 'EX', ttl);
    }
    if (payload.userCode !== undefined) {
      if (ttl === null) tx.set(`${this.#prefix}usercode:${payload.userCode}`, id);
      else tx.set(`${this.#prefix}usercode:${payload.userCode}`, id, 'EX', ttl);
    }
    if (payload.grantId !== undefined) {
      const grantKey = `${this.#prefix}grant:${payload.grantId}`;
      tx.sadd(grantKey, key);
      // The index lives as long as its longest record (a grant outlives its tokens).
      if (ttl !== null) tx.expire(grantKey, ttl, 'NX').expire(grantKey, ttl, 'GT');
    }
    await storage(() => durably(this.#client, this.#durable, () => tx.exec()));
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    const key = this.#key(id);
    if (this.#idleSeconds !== null) {
      // A registered client's use keeps it (its idle time starts again); clients are never consumed.
      const idle = this.#idleSeconds;
      const raw = (await storage(() => this.#client.eval(FIND_CLIENT, 2, key, this.#allClients, id, String(idle)))) as string | null;
      return raw === null ? undefined : (JSON.parse(raw) as AdapterPayload);
    }
    const [raw, consumed] =
      this.#model === 'RefreshToken'
        ? ((await storage(() => this.#client.eval(FIND_REFRESH, 3, key, `${key}:consumed`, `${key}:rotation`, this.#rotations))) as (string | null | undefined)[])
        : await storage(() => this.#client.mget(key, `${key}:consumed`));
    if (raw === null || raw === undefined) return undefined;
    const payload = JSON.parse(raw) as AdapterPayload;
    return consumed === null || consumed === undefined ? payload : { ...payload, consumed: Number(consumed) };
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    const id = await storage(() => this.#client.get(`${this.#prefix}uid:${uid}`));
    return id === null ? undefined : this.find(id);
  }

  async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    const id = await storage(() => this.#client.get(`${this.#prefix}usercode:${userCode}`));
    return id === null ? undefined : this.find(id);
  }

  async consume(id: string): Promise<void> {
    const key = this.#key(id);
    const now = String(Math.floor(Date.now() / 1000));
    await storage(() =>
      durably(this.#client, this.#durable, () =>
        this.#model === 'RefreshToken'
          ? this.#client.eval(CONSUME_REFRESH, 3, key, `${key}:consumed`, `${key}:rotation`, now, String(refreshRetry.windowMs), this.#rotations)
          : this.#client.eval(CONSUME, 2, key, `${key}:consumed`, now),
      ),
    );
  }

  async rotated(grantId: string): Promise<void> {
    await storage(() => durably(this.#client, this.#durable, () => this.#client.eval(ROTATED, 1, `${this.#rotations}${grantId}`)));
  }

  async destroy(id: string): Promise<void> {
    const key = this.#key(id);
    if (this.#idleSeconds !== null) await storage(() => this.#client.multi().zrem(this.#allClients, id).zrem(this.#unusedClients, id).exec());
    await storage(() => this.#client.del(key, `${key}:consumed`, `${key}:rotation`));
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await storage(() => durably(this.#client, this.#durable, () => this.#client.eval(REVOKE, 1, `${this.#prefix}grant:${grantId}`)));
  }
}

/** The adapter class the provider is given: one RedisAdapter per model, on one shared client. */
export function redisAdapterClass(client: Redis, keyPrefix: string, durable: boolean, clients: RedisClientBudget): new (model: string) => Adapter {
  return class extends RedisAdapter {
    constructor(model: string) {
      super(client, keyPrefix, model, durable, clients);
    }
  };
}
