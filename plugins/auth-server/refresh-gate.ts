/**
 * One rotation at a time per refresh token. Two uses of one refresh token at the same moment (a
 * client refreshing from two tabs or two requests at once, or a thief racing the client) both
 * found it unused and both rotated it: two successors, both live, and no replay seen. Now the
 * first use rotates and every use that arrives while that rotation is under way waits for it and
 * is given the same answer (the same access token and the same successor):
 *
 *  - a client's own race ends with one token chain, and nobody is logged out for it;
 *  - a thief's race gives both the same successor, so the next rotation by either one makes the
 *    other's next use a replay (invalid_grant, the grant revoked): reuse is still detected, one
 *    rotation later, whereas refusing the second use would log out a client that merely raced
 *    itself (its refused retry would be taken for a replay);
 *  - a use that arrives after the rotation completed is a replay as before: only the uses that
 *    waited get the answer (in Redis it is kept under the rotation's own id, which only the uses
 *    that saw the rotation under way know, for a few seconds);
 *  - when the rotation fails (a storage failure: 503), the waiting uses are not answered with it:
 *    the next one rotates itself, under the retry rule of refresh-retry.ts.
 *
 * Keyed by the client and the token (hashed), in this process (memory storage) or in Redis (a lock
 * key per token and the answer beside it; waiting uses poll it), so replicas share it. A use waits
 * at most WAIT_MS, then gets a 503 to try again; a rotation holds its lock at most LOCK_MS.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { storage } from './redis-adapter.ts';
import { temporarilyUnavailable } from './store-errors.ts';

/** The token response of a completed rotation (its JSON body). */
export type RefreshAnswer = Record<string, unknown>;

export type GateEntry =
  /** This use rotates: `finish` gives the waiting uses its answer (null: it failed, they go on their own). */
  | { readonly owner: true; finish(answer: RefreshAnswer | null): Promise<void> }
  /** Another use rotated while this one waited: its answer. */
  | { readonly owner: false; readonly answer: RefreshAnswer };

export interface RefreshGate {
  enter(clientId: string, refreshToken: string): Promise<GateEntry>;
}

export const WAIT_MS = 10_000;
const LOCK_MS = 15_000;
/** How long the answer stays for the uses that waited (they read it as soon as the lock goes). */
const ANSWER_MS = 5_000;
const POLL_MS = 20;

const gateKey = (clientId: string, refreshToken: string): string => createHash('sha256').update(`${clientId}\n${refreshToken}`).digest('base64url');

const waitedTooLong = (): Promise<Error> => temporarilyUnavailable(`another use of this refresh token is being answered and took over ${WAIT_MS / 1000} s; try again`, 1);

export class MemoryRefreshGate implements RefreshGate {
  readonly #rotations = new Map<string, Promise<RefreshAnswer | null>>();

  async enter(clientId: string, refreshToken: string): Promise<GateEntry> {
    const key = gateKey(clientId, refreshToken);
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const underWay = this.#rotations.get(key);
      if (underWay === undefined) return this.#own(key);
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now()), 'timeout')));
      const answer = await Promise.race([underWay, timeout]).finally(() => clearTimeout(timer));
      if (answer === 'timeout') throw await waitedTooLong();
      if (answer !== null) return { owner: false, answer };
    }
  }

  #own(key: string): GateEntry {
    let settle!: (answer: RefreshAnswer | null) => void;
    const rotation = new Promise<RefreshAnswer | null>((resolve) => (settle = resolve));
    this.#rotations.set(key, rotation);
    // A rotation that never finishes (it cannot, but) frees its token after LOCK_MS.
    const expiry = setTimeout(() => finish(null), LOCK_MS);
    expiry.unref();
    const finish = async (answer: RefreshAnswer | null): Promise<void> => {
      clearTimeout(expiry);
      if (this.#rotations.get(key) === rotation) this.#rotations.delete(key);
      settle(answer);
    };
    return { owner: true, finish };
  }
}

/** Takes the lock, or answers who holds it. KEYS: lock; ARGV: owner id, lock ms. */
const ENTER = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {1} end
return {0, redis.call('GET', KEYS[1])}`;

/** Leaves the answer (if any) under the owner's id and frees the lock if it is still the owner's. KEYS: lock, answer; ARGV: owner id, answer JSON or '', answer ms. */
const FINISH = `
if ARGV[2] ~= '' then redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3]) end
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1`;

export class RedisRefreshGate implements RefreshGate {
  readonly #client: Redis;
  readonly #prefix: string;

  constructor(client: Redis, keyPrefix: string) {
    this.#client = client;
    this.#prefix = `${keyPrefix}oidc:refresh-gate:`;
  }

  async enter(clientId: string, refreshToken: string): Promise<GateEntry> {
    const lock = this.#prefix + gateKey(clientId, refreshToken);
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const owner = randomBytes(16).toString('base64url');
      const [taken, holder] = (await storage(() => this.#client.eval(ENTER, 1, lock, owner, String(LOCK_MS)))) as [number, string | null];
      if (taken === 1) {
        return {
          owner: true,
          finish: async (answer) => {
            await storage(() => this.#client.eval(FINISH, 2, lock, `${lock}:answer:${owner}`, owner, answer === null ? '' : JSON.stringify(answer), String(ANSWER_MS)));
          },
        };
      }
      // Under way: wait until the holder's answer is there, or its lock is gone without one.
      for (;;) {
        if (Date.now() >= deadline) throw await waitedTooLong();
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        const [current, answer] = await storage(() => this.#client.mget(lock, `${lock}:answer:${holder}`));
        if (answer !== null && answer !== undefined) return { owner: false, answer: JSON.parse(answer) as RefreshAnswer };
        if (current !== holder) break;
      }
    }
  }
}
