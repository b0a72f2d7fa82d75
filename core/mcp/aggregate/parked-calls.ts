/**
 * A modern (2026-07-28) client's call that a legacy backend interrupts with a request of its own
 * (an elicitation, a sampling, a roots/list on the call's stream): a modern client takes no such
 * request, so the gateway answers the call `input_required`, with the backend's request embedded
 * and a `requestState` of its own, and parks the call: the backend's stream stays open here, what
 * it sends meanwhile is kept. The client's retry (the same call, `inputResponses` and that
 * `requestState`) resumes it: each answer goes to the backend as the response to its request, and
 * the backend's stream continues into the retry's answer.
 *
 * `requestState` is a bearer of the parked call, and comes back from the client: it is sealed
 * (HMAC-SHA256, with the key the replicas share, relay.ts), names the principal it was issued
 * to, the method and the tool (or prompt, or resource) of the call, and expires with the parked
 * call. Anything else is refused as not issued by this gateway. The parked call's id starts with
 * its replica's: a retry that reaches another replica is resumed through that one.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Buffer } from 'node:buffer';
import type { Principal } from '../../plugin-api/context.ts';
import { ownerKey } from './session-store.ts';

/** How long a parked call waits for the client's retry. */
export const PARK_MS = 5 * 60_000;
/** Calls parked at once in this process: past it a backend's request fails the call instead. */
const MAX_PARKED = 10_000;
/**
 * Calls one principal may have parked at once. Each holds a connection to its backend for up to
 * PARK_MS: without a bound one client could take a backend's connections from everyone.
 */
export const MAX_PARKED_PER_PRINCIPAL = 16;
/** Calls parked at once on one backend: a quarter of its connections (256) at most are held this way. */
export const MAX_PARKED_PER_BACKEND = 64;
const PREFIX = 'gh1.';

/** What the sealed state says. */
interface StateClaims {
  /** The parked call. */
  readonly p: string;
  /** Digest of the principal it was issued to. */
  readonly o: string;
  /** The call's method and the name it was about. */
  readonly m: string;
  readonly n: string;
  /** Expiry, ms since the epoch. */
  readonly e: number;
}

function ownerDigest(principal: Principal | null): string {
  const who = principal === null ? '' : ownerKey({ issuer: principal.issuer, subject: principal.subject });
  return createHash('sha256').update(who).digest('base64url').slice(0, 22);
}

/** Whether a `requestState` has the form the gateway issues (whether it is genuine is `open`'s question). */
export function isGatewayState(state: unknown): state is string {
  return typeof state === 'string' && state.startsWith(PREFIX);
}

/** A parked call as the registry keeps it. */
export interface Parked<T> {
  readonly call: T;
  /** What the client is asked: key → the backend's request (its id, method and params). */
  readonly requests: ReadonlyMap<string, { readonly id: string | number; readonly method: string; readonly params: unknown }>;
}

export class ParkedCalls<T extends { expire(): void }> {
  readonly #key: Buffer;
  readonly #replica: string;
  readonly #parked = new Map<string, Parked<T> & { readonly timer: NodeJS.Timeout; readonly owner: string; readonly backend: string }>();
  /** Parked calls per principal (its digest), and per backend. */
  readonly #perOwner = new Map<string, number>();
  readonly #perBackend = new Map<string, number>();

  /** `key`: the seal every replica shares; `replica`: this one's id, which starts every park id here. */
  constructor(key: Buffer, replica: string) {
    this.#key = key;
    this.#replica = replica;
  }

  get size(): number {
    return this.#parked.size;
  }

  /** Parks `call`; returns the sealed requestState the client must send back, or null when full (here, or for this principal). */
  park(call: T, requests: Parked<T>['requests'], principal: Principal | null, method: string, name: string, backend: string): string | null {
    const owner = ownerDigest(principal);
    if (this.#parked.size >= MAX_PARKED || (this.#perOwner.get(owner) ?? 0) >= MAX_PARKED_PER_PRINCIPAL || (this.#perBackend.get(backend) ?? 0) >= MAX_PARKED_PER_BACKEND) return null;
    const id = this.#replica + randomBytes(16).toString('base64url');
    const timer = setTimeout(() => {
      if (this.#remove(id) !== null) call.expire();
    }, PARK_MS);
    timer.unref();
    this.#parked.set(id, { call, requests, timer, owner, backend });
    this.#perOwner.set(owner, (this.#perOwner.get(owner) ?? 0) + 1);
    this.#perBackend.set(backend, (this.#perBackend.get(backend) ?? 0) + 1);
    const claims: StateClaims = { p: id, o: owner, m: method, n: name, e: Date.now() + PARK_MS };
    const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
    return `${PREFIX}${payload}.${this.#mac(payload)}`;
  }

  /**
   * The id of the parked call a retry's `state` names; null when the state is not genuine, was
   * issued to someone else or for another call, or has expired. (Whether it was used already is
   * for its replica to say: `take`.)
   */
  open(state: string, principal: Principal | null, method: string, name: string): string | null {
    const dot = state.lastIndexOf('.');
    if (!state.startsWith(PREFIX) || dot <= PREFIX.length) return null;
    const payload = state.slice(PREFIX.length, dot);
    const given = Buffer.from(state.slice(dot + 1), 'base64url');
    const expected = Buffer.from(this.#mac(payload), 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    let claims: StateClaims;
    try {
      claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as StateClaims;
    } catch {
      return null;
    }
    if (claims.o !== ownerDigest(principal) || claims.m !== method || claims.n !== name || claims.e < Date.now() || typeof claims.p !== 'string') return null;
    return claims.p;
  }

  /** The parked call `id` of this replica, taken out of the registry (once); null when it is not here. */
  take(id: string): Parked<T> | null {
    return this.#remove(id);
  }

  #remove(id: string): Parked<T> | null {
    const parked = this.#parked.get(id);
    if (parked === undefined) return null;
    clearTimeout(parked.timer);
    this.#parked.delete(id);
    for (const [counts, key] of [[this.#perOwner, parked.owner], [this.#perBackend, parked.backend]] as const) {
      const left = (counts.get(key) ?? 1) - 1;
      if (left > 0) counts.set(key, left);
      else counts.delete(key);
    }
    return parked;
  }

  #mac(payload: string): string {
    return createHmac('sha256', this.#key).update(payload).digest('base64url');
  }

  /** Ends every parked call (shutdown). */
  clear(): void {
    for (const parked of this.#parked.values()) {
      clearTimeout(parked.timer);
      parked.call.expire();
    }
    this.#parked.clear();
    this.#perOwner.clear();
    this.#perBackend.clear();
  }
}
