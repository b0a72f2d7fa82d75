/**
 * The session step of an aggregated request: the client's session found (this process's cache,
 * else the shared store: asked on every request, so a session another process deleted never
 * lives on here), created (a legacy client's `initialize`; a modern client's implicit session on
 * its first request), and ended (DELETE, expiry, eviction: its backend sessions end too).
 */
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { runHooks, type Chain, type HookOutcome } from '../../server/chain.ts';
import type { Context } from '../../plugin-api/context.ts';
import { GatewayError } from '../../base/errors.ts';
import { Reply } from '../../plugin-api/reply.ts';
import { isPromise } from '../../base/thenable.ts';
import { LEGACY_VERSIONS, UNNAMED_CLIENT } from '../../protocol/era.ts';
import type { JsonRpcRequest } from '../../protocol/jsonrpc.ts';
import { answer } from './answer.ts';
import type { BackendLink } from './backend-link.ts';
import type { FailureHandlingConfig, SessionConfig } from '../../config/aggregation-config.ts';
import type { SessionHealer } from './healing.ts';
import type { HealthMonitor } from './health.ts';
import { implicitSessionId } from './implicit-session.ts';
import { initializeSession, type InitOptions } from './init.ts';
import { AggregatedSession } from './session.ts';
import { ownedBy, sessionTag, type SessionRecord, type SessionStore } from './session-store.ts';

export function sessionNotFound(): GatewayError {
  return new GatewayError('session_not_found', 'Session not found: initialize a new session');
}

export interface SessionsOptions {
  /** `metadata.name` of the VirtualMCPServer (the serverInfo name clients see). */
  readonly name: string;
  readonly links: readonly BackendLink[];
  readonly byName: ReadonlyMap<string, BackendLink>;
  readonly chain: Chain;
  readonly store: SessionStore;
  /** Whether the live sessions here expire after `session.ttlMs` unused (GroupOptions.localExpiry). */
  readonly localExpiry: boolean;
  readonly session: SessionConfig;
  readonly failure: FailureHandlingConfig;
  readonly health: HealthMonitor;
  readonly healer: SessionHealer;
  readonly log: Logger;
  /** Whether an answer may name a backend to the caller (plugin views); null: always. */
  readonly knows: ((ctx: Context, backend: string) => boolean) | null;
}

export class Sessions {
  readonly #o: SessionsOptions;
  /** This process's live sessions: what the store does not hold (list caches, streams, routing). */
  readonly #local: LRUCache<string, AggregatedSession>;
  /** Implicit sessions being created here: concurrent first requests wait for the same one. */
  readonly #creating = new Map<string, Promise<AggregatedSession | Reply>>();

  constructor(options: SessionsOptions) {
    this.#o = options;
    const dispose = (session: AggregatedSession): void => session.close();
    // With a store that reports every session it ends (in memory), a live session leaves with
    // its record (endBackends), and a lookup here is a plain get: lru-cache's TTL bookkeeping
    // would add two clock reads and ~700 instructions to every request (memory-session-store.ts).
    this.#local = options.localExpiry
      ? new LRUCache<string, AggregatedSession>({
          max: options.session.maxSessions,
          ttl: options.session.ttlMs,
          updateAgeOnGet: true,
          // Read the clock per lookup (tens of ns): the default caches it for 1 ms behind a new timer.
          ttlResolution: 0,
          dispose,
        })
      : new LRUCache<string, AggregatedSession>({ max: options.session.maxSessions, dispose });
  }

  /**
   * The client's session. The store is asked on every request (and its TTL extended): a session
   * another process deleted must not live on here, and must never be revived by re-initializing
   * its backends. The in-memory store answers at once; Redis with one GETEX.
   */
  find(ctx: Context): AggregatedSession | Promise<AggregatedSession> {
    const id = ctx.head.sessionId;
    if (id === undefined) throw new GatewayError('session_required', 'Bad Request: Mcp-Session-Id header is required (initialize first)');
    const record = this.#o.store.touch(id, ctx.principal);
    return isPromise(record) ? record.then((stored) => this.#adopt(ctx, id, stored)) : this.#adopt(ctx, id, record);
  }

  /** The live session of a stored record, after the owner check. */
  #adopt(ctx: Context, id: string, record: SessionRecord | null): AggregatedSession {
    if (record === null) {
      this.#local.delete(id);
      throw sessionNotFound();
    }
    // Another principal holding this id is told what a stranger is: no such session. So is a
    // legacy request naming the implicit session of a modern client (or the other way round).
    if (!ownedBy(record, ctx.principal) || (record.modern === true) !== (ctx.envelope !== null)) throw sessionNotFound();
    let session = this.#local.get(id);
    if (session === undefined || (session.record.backends !== record.backends && JSON.stringify(session.record.backends) !== JSON.stringify(record.backends))) {
      // First request here, or another process re-created a backend session since.
      session?.close();
      session = new AggregatedSession(record);
      this.#local.set(id, session);
    }
    return session;
  }

  /**
   * A legacy client's `initialize` (its onMessage hooks passed): every backend initialized, the
   * session stored (one principal's many sessions end its own oldest ones, never anyone
   * else's), and the merged result answered with the new session's id.
   */
  async initialize(ctx: Context, request: JsonRpcRequest): Promise<HookOutcome> {
    const created = await initializeSession(ctx, request, this.#initOptions());
    if (created instanceof Reply) return created;
    for (const ended of await this.#o.store.save(created.session.record)) {
      this.#o.log.info({ session: sessionTag(ended.id) }, 'a principal went past maxSessionsPerPrincipal or maxSessionsSizePerPrincipal: its oldest session ended');
      void this.endBackends(null, ended);
    }
    this.#local.set(created.session.id, created.session);
    return answer(ctx, this.#o.chain, { jsonrpc: '2.0', id: request.id, result: created.result }, { 'mcp-session-id': created.session.id });
  }

  /**
   * A modern client's implicit session (implicit-session.ts: one per principal and declared
   * capabilities), created on its first request; or what the client gets instead.
   */
  implicit(ctx: Context): AggregatedSession | HookOutcome | Promise<AggregatedSession | HookOutcome> {
    // The pipeline's first step: no hook has changed the message since intake read its capabilities' JSON.
    const id = implicitSessionId(ctx.principal, ctx.envelope!.capabilities, ctx.capabilitiesJson);
    const record = this.#o.store.touch(id, ctx.principal);
    if (isPromise(record)) return record.then((stored) => (stored === null ? this.#createImplicit(ctx, id) : this.#adopt(ctx, id, stored)));
    return record === null ? this.#createImplicit(ctx, id) : this.#adopt(ctx, id, record);
  }

  /**
   * A new implicit session opens the backends' sessions, as a legacy client's `initialize`
   * would: the onMessage hooks see that `initialize` first (synthesized from the request's
   * envelope), so a plugin that refuses a caller refuses it before any backend is asked.
   */
  async #createImplicit(ctx: Context, id: string): Promise<AggregatedSession | HookOutcome> {
    const hooks = this.#o.chain.messageHooks('initialize');
    if (hooks !== null) {
      const envelope = ctx.envelope!;
      const opening: JsonRpcRequest = { jsonrpc: '2.0', id: ctx.rpcId ?? 0, method: 'initialize', params: { protocolVersion: LEGACY_VERSIONS[0], capabilities: envelope.capabilities, clientInfo: envelope.clientInfo ?? UNNAMED_CLIENT } };
      const refused = await runHooks(hooks, ctx, opening);
      if (refused !== undefined) return refused;
    }
    return this.#openImplicit(ctx, id);
  }

  #openImplicit(ctx: Context, id: string): Promise<AggregatedSession | Reply> {
    this.#local.delete(id);
    const pending = this.#creating.get(id);
    if (pending !== undefined) return pending;
    const creating = (async (): Promise<AggregatedSession | Reply> => {
      const created = await initializeSession(ctx, ctx.message as JsonRpcRequest, this.#initOptions(), id);
      if (created instanceof Reply) return created;
      const stored = await this.#o.store.create(created.session.record);
      if (!stored.created) {
        // Another replica opened this client's implicit session meanwhile: its backend sessions
        // serve, the ones opened here end (on this request's credentials) rather than linger.
        this.#o.log.debug({ session: sessionTag(id) }, 'an implicit session was opened by another replica at the same time: ending the backend sessions opened here');
        void this.endBackends(ctx, created.session.record).catch(() => undefined);
        return this.#adopt(ctx, id, stored.existing);
      }
      for (const ended of stored.ended) void this.endBackends(null, ended);
      this.#local.set(id, created.session);
      return created.session;
    })().finally(() => this.#creating.delete(id));
    this.#creating.set(id, creating);
    return creating;
  }

  #initOptions(): InitOptions {
    return {
      name: this.#o.name,
      maxSessionBytes: this.#o.session.maxSessionBytes,
      links: this.#o.links,
      profiles: this.#o.health.profiles,
      failure: this.#o.failure,
      // What a backend says while it initializes has no client stream to go to yet.
      sink: () => () => undefined,
      failed: (link, err) => this.#o.healer.failedAlone(link, err),
      log: this.#o.log,
      knows: this.#o.knows,
    };
  }

  /** A client's DELETE: the session is gone from the store first (a GET that races it finds none), then its backend sessions end. */
  async delete(ctx: Context): Promise<HookOutcome> {
    const session = await this.find(ctx);
    await this.#o.store.delete(session.id);
    await this.endBackends(ctx, session.record);
    return Reply.empty(200, { 'mcp-session-id': session.id });
  }

  /**
   * Ends the backend sessions of a session that is over: deleted by the client, or expired or
   * evicted from the in-memory store (a shared store's expiry leaves them to the backends' own).
   */
  async endBackends(ctx: Context | null, record: SessionRecord): Promise<void> {
    this.#local.delete(record.id);
    await Promise.allSettled(Object.entries(record.backends).map(([name, backend]) => this.#o.byName.get(name)?.remove(ctx, backend)));
  }

  /** The sessions live in this process. */
  live(): IterableIterator<AggregatedSession> {
    return this.#local.values();
  }

  get size(): number {
    return this.#local.size;
  }

  close(): void {
    for (const session of this.#local.values()) session.close();
  }
}
