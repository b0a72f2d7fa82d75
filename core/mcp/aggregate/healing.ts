/**
 * Keeping the backends of an aggregated session joined while they restart, go down and come
 * back, for lists as for calls, so that a long-lived client never has to start over:
 *
 *  - Lost: a backend that answers a request on its session with 404 (MCP's "no such session"),
 *    or that refuses connections after it was reachable, has lost the session (it restarted). A
 *    400 or 410 without a result (how many servers say it instead, each in its own words) may
 *    mean the same: the backend is asked with a ping on that session, and the session is lost if
 *    it does not answer (backend-link.ts, sessionVerdict). A lost session is marked; its next use
 *    initializes it again with the client's parameters. A request rejoins at most once: if the
 *    new session fails too, the request gets that answer (or an error naming the backend); a
 *    request the backend answered with a result is never sent again.
 *  - Absent: a backend that was down at initialize, or whose rejoin failed, is tried again by
 *    later requests of the session, after a backoff (1 s, doubling to 30 s) that the health
 *    monitor cuts short when it sees the backend recover. Until then a request for it is told at
 *    once that it is unavailable, with the reason of the last try.
 *  - Joined: the new backend session is written to the session store, the lists are rebuilt,
 *    the client is told `notifications/*\/list_changed` for what the backend serves, and the
 *    client's GET stream opens the backend's stream.
 *
 * What the backend session held (a log level, resource subscriptions) is not replayed: the
 * backend starts from its defaults, as after any restart.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { isModernVersion } from '../../protocol/era.ts';
import type { Context } from '../../plugin-api/context.ts';
import { GatewayError } from '../../base/errors.ts';
import type { JsonRpcMessage } from '../../protocol/jsonrpc.ts';
import { LIST_CHANGED_NOTIFICATIONS } from '../../protocol/methods.ts';
import { callerMustReauthenticate, GATEWAY_CALL, reauthenticationAmong, type BackendLink, type CallResult, type CallTiming, type MessageSink } from './backend-link.ts';
import type { HealthMonitor } from './health.ts';
import { confirmBackendSession, initializeBackend, reasonOf } from './init.ts';
import type { AggregatedSession } from './session.ts';
import { sessionTag, type BackendSessionRecord, type SessionStore } from './session-store.ts';

const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 30_000;

export interface SessionHealerOptions {
  readonly links: readonly BackendLink[];
  readonly store: SessionStore;
  readonly health: HealthMonitor;
  readonly log: Logger;
  /** Where a backend's messages on its own calls go (the client's GET stream). */
  readonly sink: (session: AggregatedSession, link: BackendLink) => MessageSink;
}

/** Wait before trying an absent backend again, after `failures` failed tries in a row. */
export function retryDelay(failures: number): number {
  return Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** Math.max(0, failures - 1));
}

function unavailable(link: BackendLink, reason: string): GatewayError {
  const description = reason.includes(`"${link.name}"`) ? reason : `backend "${link.name}" is unavailable (${reason})`;
  return new GatewayError('backend_unavailable', description, { extra: { backend: link.name } });
}

/**
 * Whether a failure is the backend's own, and so says something about its health for everyone:
 * unreachable, too slow, broken answers, server errors. A plugin's refusal, a hook that threw,
 * or the backend refusing one request (a 4xx) does not make a backend unhealthy.
 */
function isBackendFailure(err: unknown): boolean {
  if (!(err instanceof GatewayError)) return false;
  if (err.code === 'backend_unavailable' || err.code === 'backend_timeout') return true;
  const status = err.extra?.['status'];
  return err.code === 'backend_error' && !(typeof status === 'number' && status < 500);
}

/** Whether a failed call means the backend went away (and its sessions with it). */
function isUnreachable(err: unknown): boolean {
  return err instanceof GatewayError && err.code === 'backend_unavailable';
}

export class SessionHealer {
  readonly #o: SessionHealerOptions;
  /** Probes in flight, by the backend session they ask about (settled ones are forgotten). */
  readonly #probes = new Map<BackendSessionRecord, Promise<boolean>>();

  constructor(options: SessionHealerOptions) {
    this.#o = options;
  }

  /**
   * The backend's session in `session`, ready to use: as it is, or joined (again) first. Throws
   * a `backend_unavailable` GatewayError naming the backend when it cannot be joined now.
   */
  use(ctx: Context | null, session: AggregatedSession, link: BackendLink): BackendSessionRecord | Promise<BackendSessionRecord> {
    return session.usable(link.name) ?? this.join(ctx, session, link);
  }

  /** Joins `link` to `session` (again), sharing a join already in progress; honours the backoff. */
  join(ctx: Context | null, session: AggregatedSession, link: BackendLink): Promise<BackendSessionRecord> {
    const pending = session.joining(link.name);
    if (pending !== undefined) return pending;
    const absence = session.absence(link.name);
    if (absence !== undefined && !this.#mayRetry(link, absence.failures, absence.triedAt)) {
      const seconds = Math.max(1, Math.round((performance.now() - absence.triedAt) / 1000));
      return Promise.reject(unavailable(link, `${absence.reason}; last tried ${seconds} s ago`));
    }
    return session.startJoin(link.name, this.#join(ctx, session, link));
  }

  /**
   * Tries every backend the session never had whose retry time has come, in parallel; resolves
   * once those tries ended (a failure is recorded, not thrown, unless the caller's own credentials
   * were refused). Nothing to do costs one check.
   */
  async joinMissing(ctx: Context | null, session: AggregatedSession): Promise<void> {
    const missing = session.record.missing;
    if (missing.length === 0) return;
    const due = this.#o.links.filter((link) => missing.includes(link.name) && this.#due(session, link));
    if (due.length === 0) return;
    const tries = await Promise.allSettled(due.map((link) => this.join(ctx, session, link)));
    const refusal = reauthenticationAmong(tries);
    if (refusal !== undefined) throw refusal;
  }

  /** Whether `link` is absent from `session` and may be tried now. */
  #due(session: AggregatedSession, link: BackendLink): boolean {
    if (session.joining(link.name) !== undefined) return true;
    const absence = session.absence(link.name);
    return absence === undefined || this.#mayRetry(link, absence.failures, absence.triedAt);
  }

  #mayRetry(link: BackendLink, failures: number, triedAt: number): boolean {
    return performance.now() - triedAt >= retryDelay(failures) || this.#o.health.recoveredSince(link.name, triedAt);
  }

  /**
   * The backend said it lost `failed`, its session in `session`: the session to send on again.
   * When several requests hear it at once, the first one joins; the others get that join, or the
   * session it made, and none of them ends the session another just opened.
   */
  rejoin(ctx: Context | null, session: AggregatedSession, link: BackendLink, failed: BackendSessionRecord): Promise<BackendSessionRecord> {
    session.markLost(link.name, failed);
    const current = session.usable(link.name);
    return current !== undefined ? Promise.resolve(current) : this.join(ctx, session, link);
  }

  /**
   * One JSON-RPC call to `link` on the session's behalf: joined first if needed, and joined again
   * (once) if the backend lost the session, then the call repeated.
   */
  async call(ctx: Context | null, session: AggregatedSession, link: BackendLink, message: JsonRpcMessage, sink: MessageSink | null = null): Promise<CallResult> {
    let backend = await this.use(ctx, session, link);
    let result = await this.send(ctx, session, link, backend, message, sink);
    if (!(await this.lostBy(ctx, session, link, backend, result))) return result;
    backend = await this.rejoin(ctx, session, link, backend);
    result = await this.send(ctx, session, link, backend, message, sink);
    if (link.sessionVerdict(backend, result) === 'lost') {
      throw new GatewayError('backend_unavailable', `backend "${link.name}" lost the session again right after it was initialized anew`, { extra: { backend: link.name } });
    }
    return result;
  }

  /**
   * Whether `result`, the answer to a request on `backend`, means the backend lost that session:
   * a 404 says so; a 400/410 without a result may, and the backend is asked (one ping for every
   * request that heard it at once). A lost session is marked.
   */
  async lostBy(ctx: Context | null, session: AggregatedSession, link: BackendLink, backend: BackendSessionRecord, result: CallResult): Promise<boolean> {
    const verdict = link.sessionVerdict(backend, result);
    if (verdict === 'kept' || (verdict === 'unsure' && (await this.stillKnown(ctx, link, backend)))) return false;
    session.markLost(link.name, backend);
    return true;
  }

  /** Asks the backend whether it still knows `backend` (a ping on it); requests that ask at once share the answer. */
  stillKnown(ctx: Context | null, link: BackendLink, backend: BackendSessionRecord): Promise<boolean> {
    let asked = this.#probes.get(backend);
    if (asked === undefined) {
      asked = link.stillKnows(ctx, backend).finally(() => this.#probes.delete(backend));
      this.#probes.set(backend, asked);
    }
    return asked;
  }

  /**
   * One call on `backend`, as it is (no join): what it shows about the backend's health is
   * recorded, and a backend that could not be reached, or said it does not know the session
   * (404), has lost it.
   */
  async send(
    ctx: Context | null,
    session: AggregatedSession,
    link: BackendLink,
    backend: BackendSessionRecord,
    message: JsonRpcMessage,
    sink: MessageSink | null = null,
    timing: CallTiming = GATEWAY_CALL,
  ): Promise<CallResult> {
    let result: CallResult;
    try {
      // Only a modern backend is sent the envelope: a legacy session's is not made (and kept) for nothing.
      const envelope = ctx?.envelope ?? (isModernVersion(backend.protocolVersion) ? session.envelope : undefined);
      result = await link.call(ctx, backend, message, sink, envelope, timing);
    } catch (err) {
      this.failed(session, link, backend, err);
      throw err;
    }
    this.#o.health.observe(link.name, result.status >= 500 ? `HTTP ${result.status}` : null);
    if (link.sessionVerdict(backend, result) === 'lost') session.markLost(link.name, backend);
    return result;
  }

  /** A request to `backend` failed: the health monitor hears of the backend's failures; unreachable means lost. */
  failed(session: AggregatedSession, link: BackendLink, backend: BackendSessionRecord, err: unknown): void {
    this.failedAlone(link, err);
    if (isUnreachable(err)) session.markLost(link.name, backend);
  }

  /** A request to `link` outside any session failed (a client's initialize): the health monitor hears of the backend's failures. */
  failedAlone(link: BackendLink, err: unknown): void {
    if (isBackendFailure(err)) this.#o.health.observe(link.name, reasonOf(err));
  }

  /** A request to `link` succeeded (for the health monitor). */
  succeeded(link: BackendLink): void {
    this.#o.health.observe(link.name, null);
  }

  async #join(ctx: Context | null, session: AggregatedSession, link: BackendLink): Promise<BackendSessionRecord> {
    const previous = session.backends.get(link.name);
    const wasLost = previous !== undefined;
    const record = session.record;
    const params = { protocolVersion: record.protocolVersion, capabilities: record.clientCapabilities, clientInfo: record.clientInfo };
    let backend: BackendSessionRecord;
    try {
      backend = (await initializeBackend(ctx, link, params, this.#o.sink(session, link), this.#o.health.profiles)).record;
      await confirmBackendSession(ctx, link, backend);
    } catch (err) {
      // The caller's credentials, not the backend: no backoff, the client is told to log in again.
      if (callerMustReauthenticate(err)) throw err;
      const reason = reasonOf(err);
      session.absent(link.name, reason, performance.now());
      if (isBackendFailure(err)) this.#o.health.observe(link.name, reason);
      this.#o.log.warn({ backend: link.name, session: sessionTag(session.id), reason }, wasLost ? `backend ${link.name} lost the session and could not be initialized again` : `backend ${link.name} is still unavailable to the session`);
      throw unavailable(link, reason);
    }
    this.#o.health.observe(link.name, null);
    session.joined(link.name, backend);
    if (!(await this.#o.store.update(session.record))) {
      // The session ended meanwhile (DELETE, expiry): the new backend session is not kept.
      void link.remove(null, backend).catch(() => undefined);
      throw new GatewayError('session_not_found', 'Session not found: initialize a new session');
    }
    this.#announce(session, link, backend);
    this.#o.log.info({ backend: link.name, session: sessionTag(session.id) }, wasLost ? `backend ${link.name} lost the session: initialized it again` : `backend ${link.name} joined the session`);
    // A backend that went away may still hold the old session (a network blip, not a restart).
    if (previous?.sessionId != null) void link.remove(null, previous).catch(() => undefined);
    return backend;
  }

  /** Tells the client what the joined backend changes: its lists, and its GET stream. */
  #announce(session: AggregatedSession, link: BackendLink, backend: BackendSessionRecord): void {
    for (const listen of session.listens) listen.backendJoined(link.name);
    const stream = session.stream;
    if (stream === null) return;
    stream.backendJoined(link.name);
    for (const [capability, method] of LIST_CHANGED_NOTIFICATIONS) {
      if (backend.capabilities[capability] !== undefined) stream.deliver(link.index, { jsonrpc: '2.0', method });
    }
  }
}
