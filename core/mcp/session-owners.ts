/**
 * Who opened each transparent session. In transparent mode the backend assigns the session id
 * (Mcp-Session-Id in its answer to initialize) and the gateway passes it through; without a
 * record of who received it, anyone else who learned the id — from a log, a shared screen, a
 * proxy — could use the session with a token of their own, as the aggregated sessions' owner
 * check (aggregate/session-store.ts) prevents for the gateway's own ids. So, when the request is
 * authenticated, the answer that carries a new id binds it to the principal (issuer + subject),
 * and a request of another principal naming it — POST, GET stream or DELETE — gets the 404 of an
 * unknown session, never reaching the backend; so does an id the gateway holds no binding for
 * (it did not see it given out, or its binding ended): both answers are the same. Anonymous
 * requests have no principal: nothing is bound or checked.
 *
 * Bounded: at most `maxSessions` bindings (least recently used first out), each for `ttlMs`
 * after its last use, at most `maxPerPrincipal` per principal (its next one ends its oldest);
 * a session whose binding ended gets 404 and its client initializes again.
 *
 * With replicas (session storage on Redis) bindings are shared through `SharedOwners`: the replica
 * that binds an id writes it there, any other reads it on first sight and keeps it (a binding never
 * changes owner), and the replica serving a session slides its time to live now and then. Redis
 * holds the per-principal bound for all replicas; each replica holds it too for what it keeps (so
 * the one that opened a principal's oldest session stops serving it with the others), and a
 * binding that another replica ended (the principal's oldest, or a DELETE) is dropped here when
 * its time to live is next extended and Redis no longer has it. The hot path of an authenticated
 * request is one lookup in the local cache, and not even that for the next requests of one
 * connection within a moment (`#recheckMs`, at most a second and a quarter of the time to live)
 * that name the same session with the same principal object (incoming auth keeps one per
 * connection): the binding last found is then still bound, unless it ended here, which marks it
 * (one that another replica ended is found so at most `#recheckMs` later than without this).
 */
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { LRUCache } from 'lru-cache';
import type { Context } from '../plugin-api/context.ts';
import { isHeaderNamed } from '../base/header-list.ts';
import { GatewayError } from '../base/errors.ts';
import type { Logger } from '../observe/log.ts';
import { ownerKey, type SessionOwner } from './aggregate/session-store.ts';

/** A principal as a binding names it. */
export interface Binding extends SessionOwner {
  /** `issuer \n subject`: one string per principal. */
  readonly key: string;
  /** performance.now() when the shared copy's time to live was last extended (0: never). */
  refreshedAt: number;
  /** False once the binding left the local cache (ended, evicted, replaced, expired). */
  live: boolean;
}

/** The binding a connection's last request was admitted to, by that principal object, and when (no later than its lookup). */
interface Admitted {
  readonly id: string;
  readonly principal: object;
  readonly binding: Binding;
  readonly at: number;
}

/** Where replicas share their bindings (Redis: redis-session-owners.ts). Rejects with a 503 GatewayError when it cannot answer. */
export interface SharedOwners {
  /** The owner of `id`, null when none is stored. */
  load(id: string): Promise<SessionOwner | null>;
  /** Binds `id` to `owner` unless it is bound already: null when it now is, else the owner it had. */
  bind(id: string, owner: SessionOwner): Promise<SessionOwner | null>;
  /** Extends the time to live of `id`'s binding (and of its owner's index): false when the binding is no longer stored. */
  refresh(id: string, owner: SessionOwner): Promise<boolean>;
  forget(id: string, owner: SessionOwner): Promise<void>;
}

export interface SessionOwnersOptions {
  readonly maxSessions: number;
  readonly maxPerPrincipal: number;
  readonly ttlMs: number;
  readonly shared?: SharedOwners | null;
  readonly log: Logger;
}

/** What an unknown transparent session gets, whoever asks: the aggregated endpoint's words. */
export function sessionNotFound(): GatewayError {
  return new GatewayError('session_not_found', 'Session not found: initialize a new session');
}

/** The value of `mcp-session-id` among a backend's response headers (any letter case). */
function sessionIdIn(headers: readonly string[]): string | undefined {
  for (let i = 0; i < headers.length; i += 2) {
    if (isHeaderNamed(headers[i]!, 'mcp-session-id')) return headers[i + 1];
  }
  return undefined;
}

/** How long a binding ended here is known as ended without asking the shared store. */
const ENDED_MS = 60_000;

export class SessionOwners {
  readonly #local: LRUCache<string, Binding>;
  /** Principal → ids of its bindings held here, oldest first. */
  readonly #byOwner = new Map<string, Set<string>>();
  readonly #maxPerPrincipal: number;
  readonly #shared: SharedOwners | null;
  /**
   * Bindings ended here (the principal's bound, a DELETE) in the last minute, with a shared
   * store: what this process ended is told to the store without waiting, so until the store has
   * done it, a request of such an id must not load the binding from there again.
   */
  readonly #ended: LRUCache<string, true> | null;
  /** How long after a refresh the shared copy's time to live is extended again. */
  readonly #refreshMs: number;
  /**
   * How long a connection's admission to a binding stands without a lookup: short beside the
   * time to live, so that the binding (its time slid by the lookup that admitted it) cannot
   * expire within it, and the lookups that do run keep sliding it.
   */
  readonly #recheckMs: number;
  /**
   * Per instance: each connection's last admission, by its socket. Not a property of the
   * socket: adding one changes its hidden class, and Node's stream functions, which every socket
   * of the process goes through, would see one more kind of socket each time (with the backend
   * connections' and incoming auth's, enough for their property loads to go megamorphic).
   */
  readonly #admitted = new WeakMap<Socket, Admitted>();
  readonly #log: Logger;

  constructor(options: SessionOwnersOptions) {
    this.#maxPerPrincipal = options.maxPerPrincipal;
    this.#shared = options.shared ?? null;
    this.#refreshMs = Math.max(1_000, Math.floor(options.ttlMs / 4));
    this.#recheckMs = Math.min(1_000, Math.floor(options.ttlMs / 4));
    this.#log = options.log;
    this.#local = new LRUCache<string, Binding>({
      max: options.maxSessions,
      ttl: options.ttlMs,
      updateAgeOnGet: true,
      // Read the clock per lookup (tens of ns): the default caches it for 1 ms behind a new timer.
      ttlResolution: 0,
      dispose: (binding, id) => this.#unindex(binding, id),
    });
    this.#ended = this.#shared === null ? null : new LRUCache<string, true>({ max: options.maxSessions, ttl: ENDED_MS, ttlResolution: 0 });
  }

  /** Bindings held in this process. */
  get size(): number {
    return this.#local.size;
  }

  /**
   * Whether the request may use the session it names: undefined when it may (or names none, or
   * is anonymous), else the 404 of an unknown session; a promise only when the binding must be
   * read from the shared store (first sight of the id in this process).
   */
  check(ctx: Context): GatewayError | undefined | Promise<GatewayError | undefined> {
    const principal = ctx.principal;
    const id = ctx.head.sessionId;
    if (principal === null || id === undefined) return undefined;
    const socket = ctx.req.socket as Socket | null | undefined;
    const last = socket == null ? undefined : this.#admitted.get(socket);
    // Measured to now, not to ctx.startedAt: a request's body (or its era probe) may have taken
    // longer than the time to live since it began, and expiry marks the binding only when read.
    if (last !== undefined && last.principal === principal && last.id === id && last.binding.live && performance.now() - last.at < this.#recheckMs) return undefined;
    const binding = this.#local.get(id);
    if (binding !== undefined) {
      if (binding.subject !== principal.subject || binding.issuer !== principal.issuer) return sessionNotFound();
      if (this.#shared !== null && ctx.startedAt - binding.refreshedAt > this.#refreshMs) this.#refresh(id, binding, ctx.startedAt);
      if (socket != null) this.#admitted.set(socket, { id, principal, binding, at: ctx.startedAt });
      return undefined;
    }
    if (this.#shared === null || this.#ended!.has(id)) return sessionNotFound();
    return this.#shared.load(id).then((owner) => {
      if (owner === null) return sessionNotFound();
      const loaded = this.#keep(id, owner, ctx.startedAt);
      return loaded.subject === principal.subject && loaded.issuer === principal.issuer ? undefined : sessionNotFound();
    });
  }

  /**
   * The backend answered an authenticated initialize that named no session with `status` and
   * `headers`: a session id among them is bound to the principal. A DELETE answered 2xx: the
   * binding ends. Null, or the error the client gets instead of that answer (the backend handed
   * out an id bound to another principal).
   */
  answered(ctx: Context, status: number, headers: readonly string[]): GatewayError | null {
    const principal = ctx.principal;
    if (principal === null || status < 200 || status >= 300) return null;
    if (ctx.req.method === 'DELETE') {
      const id = ctx.head.sessionId;
      if (id !== undefined) this.#forget(id);
      return null;
    }
    const id = sessionIdIn(headers);
    if (id === undefined) return null;
    const owner: SessionOwner = { issuer: principal.issuer, subject: principal.subject };
    const bound = this.#local.get(id);
    if (bound !== undefined) {
      if (bound.subject === owner.subject && bound.issuer === owner.issuer) return null;
      return this.#foreign(ctx);
    }
    const binding = this.#keep(id, owner, ctx.startedAt);
    if (this.#shared !== null) {
      binding.refreshedAt = ctx.startedAt;
      this.#shared.bind(id, owner).then(
        (stored) => {
          if (stored === null || (stored.subject === owner.subject && stored.issuer === owner.issuer)) return;
          // Another replica bound the id first: its owner is the owner, here too.
          this.#local.delete(id);
          this.#keep(id, stored, ctx.startedAt);
          this.#log.error({ requestId: ctx.requestId }, 'a backend gave out a session id that another principal already holds (bound through another replica): only that principal may use it');
        },
        (err: unknown) => this.#log.warn({ error: err instanceof Error ? err.message : String(err) }, 'transparent session binding not shared: other replicas will answer this session 404 until its client initializes again'),
      );
    }
    return null;
  }

  /** Logged by the request's failure, with the backend's name. */
  #foreign(ctx: Context): GatewayError {
    return new GatewayError('backend_error', 'the backend gave out a session id that belongs to another principal', {
      detail: 'a transparent session id the backend answered with is bound to another principal: the backend reuses session ids',
      extra: ctx.target === null ? undefined : { backend: ctx.target.backend },
    });
  }

  /** Holds `id` → `owner` here (the principal's oldest held here past its maximum end). */
  #keep(id: string, owner: SessionOwner, now: number): Binding {
    const key = ownerKey(owner);
    const binding: Binding = { issuer: owner.issuer, subject: owner.subject, key, refreshedAt: now, live: true };
    this.#local.set(id, binding);
    let ids = this.#byOwner.get(key);
    if (ids === undefined) this.#byOwner.set(key, (ids = new Set()));
    ids.add(id);
    for (const oldest of ids) {
      if (ids.size <= this.#maxPerPrincipal) break;
      this.#ended?.set(oldest, true);
      this.#local.delete(oldest); // dispose takes it out of `ids`
    }
    return binding;
  }

  #unindex(binding: Binding, id: string): void {
    binding.live = false;
    const ids = this.#byOwner.get(binding.key);
    if (ids === undefined) return;
    ids.delete(id);
    if (ids.size === 0) this.#byOwner.delete(binding.key);
  }

  #refresh(id: string, binding: Binding, now: number): void {
    binding.refreshedAt = now;
    this.#shared!.refresh(id, binding).then(
      (stored) => {
        // Ended through another replica: the next request of it reads the shared store (and gets 404).
        if (!stored && this.#local.peek(id) === binding) this.#local.delete(id);
      },
      (err: unknown) => this.#log.debug({ error: err instanceof Error ? err.message : String(err) }, 'transparent session binding: time to live not extended'),
    );
  }

  #forget(id: string): void {
    const binding = this.#local.get(id);
    this.#ended?.set(id, true);
    this.#local.delete(id);
    if (binding !== undefined && this.#shared !== null) {
      this.#shared.forget(id, binding).catch((err: unknown) => this.#log.debug({ error: err instanceof Error ? err.message : String(err) }, 'transparent session binding: not removed from the shared store (it expires)'));
    }
  }

  close(): void {
    this.#local.clear();
    this.#byOwner.clear();
  }
}
