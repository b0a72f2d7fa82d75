/**
 * What the replicas of one gateway tell each other about what one of them holds: a call parked
 * for a modern client's answer (parked-calls.ts) whose retry reached another replica, or a
 * legacy client's answer to a request for input (input-relay.ts) posted to another replica than
 * the one waiting for it. Each replica has an id, part of the ids of what it holds, so that any
 * other knows whom to tell; and all of them share one key, the seal of the `requestState`s they
 * issue.
 *
 * They also claim things once among themselves (`claim`): the response a resumed stream may
 * deliver (resume-tickets.ts) is delivered by one of them, once.
 *
 * With Redis session storage, the replicas talk over Redis pub/sub (a channel per replica, on a
 * connection of its own that resubscribes after a failover), share the key through one Redis
 * key written once, and claim with SET NX under `<keyPrefix>vmcp:claim:<name>`. In memory, the
 * process is the only replica.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Buffer } from 'node:buffer';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';

export interface RelayMessage {
  readonly type: string;
  readonly [field: string]: unknown;
}

export type RelayHandler = (message: RelayMessage) => void;

/** Length of a replica id (base64url of 8 random bytes): ids of what it holds start with it. */
export const REPLICA_ID_LENGTH = 11;

export interface Relay {
  /** This replica's id. */
  readonly replica: string;
  /** The key every replica shares (set once `start` resolved). */
  readonly key: Buffer;
  start(): Promise<void>;
  /** Handles the messages sent to this replica (one handler). */
  onMessage(handler: RelayHandler): void;
  /** Sends `message` to `replica`; resolves false when nobody there heard it. */
  send(replica: string, message: RelayMessage): Promise<boolean>;
  /**
   * Claims `name` among the replicas for `ttlMs`: true for the first claim, false for every later
   * one until it expires — and false when the replicas cannot be asked (nothing is claimed twice).
   * In one process the answer is at once.
   */
  claim(name: string, ttlMs: number): boolean | Promise<boolean>;
  close(): Promise<void>;
}

/** Claims one process remembers at once (LocalRelay): past it, the oldest are forgotten. */
const MAX_LOCAL_CLAIMS = 65_536;

/** The replica that holds something whose id starts with its id. */
export function replicaOf(id: string): string {
  return id.slice(0, REPLICA_ID_LENGTH);
}

function newReplicaId(): string {
  return randomBytes(8).toString('base64url');
}

/** One process, one replica: what it holds is here, or nowhere. */
export class LocalRelay implements Relay {
  readonly replica = newReplicaId();
  readonly key = randomBytes(32);
  #handler: RelayHandler | null = null;

  async start(): Promise<void> {}

  onMessage(handler: RelayHandler): void {
    this.#handler = handler;
  }

  async send(replica: string, message: RelayMessage): Promise<boolean> {
    if (replica !== this.replica || this.#handler === null) return false;
    const handler = this.#handler;
    queueMicrotask(() => handler(message));
    return true;
  }

  /** Name → when its claim expires (performance.now()), oldest claim first. */
  readonly #claims = new Map<string, number>();

  claim(name: string, ttlMs: number): boolean {
    const claims = this.#claims;
    const now = performance.now();
    const until = claims.get(name);
    if (until !== undefined && until > now) return false;
    claims.delete(name);
    claims.set(name, now + ttlMs);
    if (claims.size > MAX_LOCAL_CLAIMS) claims.delete(claims.keys().next().value!);
    return true;
  }

  async close(): Promise<void> {}
}

/** Replicas sharing a Redis: a pub/sub channel each, one shared key. */
export class RedisRelay implements Relay {
  readonly replica = newReplicaId();
  #key: Buffer | null = null;
  readonly #client: Redis;
  readonly #prefix: string;
  readonly #log: Logger;
  #subscriber: Redis | null = null;
  #handler: RelayHandler | null = null;

  constructor(client: Redis, keyPrefix: string, log: Logger) {
    this.#client = client;
    this.#prefix = keyPrefix;
    this.#log = log;
  }

  get key(): Buffer {
    if (this.#key === null) throw new Error('the relay is not started');
    return this.#key;
  }

  #channel(replica: string): string {
    return `${this.#prefix}vmcp:relay:${replica}`;
  }

  async start(): Promise<void> {
    // The first replica writes the key; every replica reads the one that stands.
    const name = `${this.#prefix}vmcp:relay-key`;
    await this.#client.set(name, randomBytes(32).toString('base64'), 'NX');
    const stored = await this.#client.get(name);
    if (stored === null) throw new Error('the replicas\' shared key could not be read from Redis');
    this.#key = Buffer.from(stored, 'base64');
    const subscriber = this.#client.duplicate();
    subscriber.on('error', (err: Error) => this.#log.debug({ err: err.message }, 'relay subscriber'));
    subscriber.on('message', (_channel: string, text: string) => {
      let message: unknown;
      try {
        message = JSON.parse(text);
      } catch {
        return;
      }
      if (typeof message !== 'object' || message === null || typeof (message as RelayMessage).type !== 'string') return;
      try {
        this.#handler?.(message as RelayMessage);
      } catch (err) {
        this.#log.error({ err }, 'a relayed message could not be handled');
      }
    });
    await subscriber.subscribe(this.#channel(this.replica));
    this.#subscriber = subscriber;
  }

  onMessage(handler: RelayHandler): void {
    this.#handler = handler;
  }

  async send(replica: string, message: RelayMessage): Promise<boolean> {
    try {
      return (await this.#client.publish(this.#channel(replica), JSON.stringify(message))) > 0;
    } catch (err) {
      this.#log.warn({ err: (err as Error).message }, 'a message to another replica could not be sent');
      return false;
    }
  }

  async claim(name: string, ttlMs: number): Promise<boolean> {
    try {
      return (await this.#client.set(`${this.#prefix}vmcp:claim:${name}`, '1', 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX')) === 'OK';
    } catch (err) {
      this.#log.warn({ err: (err as Error).message }, 'a claim could not be made among the replicas');
      return false;
    }
  }

  async close(): Promise<void> {
    await this.#subscriber?.quit().catch(() => this.#subscriber?.disconnect());
  }
}
