/**
 * One aggregated session as this process holds it: the stored record (backend session ids),
 * plus what is rebuilt on demand and never stored — list caches, the routing of in-flight
 * requests and tasks, and the client's open GET stream.
 */
import { Buffer } from 'node:buffer';
import type { Context } from '../../plugin-api/context.ts';
import type { ClientEnvelope } from '../../protocol/era.ts';
import type { JsonRpcId, JsonRpcMessage, JsonRpcRequest } from '../../protocol/jsonrpc.ts';
import type { ListKind } from '../../protocol/methods.ts';
import type { ListCache } from './lists.ts';
import type { ViewedList } from './list-views.ts';
import type { SessionRecord, BackendSessionRecord } from './session-store.ts';
import type { InstructionParts } from './initialize-answer.ts';

/** What the session needs from the client's GET stream. */
export interface SessionStream {
  /** The client's GET request: its credentials open backend streams and join late backends. */
  readonly ctx: Context;
  /** A backend's message for the client that did not come on the stream itself (fan-out calls). */
  deliver(backendIndex: number, message: JsonRpcMessage): void;
  /** A backend joined the session (or joined it again): its GET stream is opened. */
  backendJoined(name: string): void;
  /** What a call to backend `index` waits for before it is sent: that backend's stream on its way (null: nothing). */
  opening(index: number): Promise<void> | null;
  close(): void;
}

/** A modern client's call in flight on a legacy backend, which a request on that backend session's own stream may be for. */
export interface AskableCall {
  /** The backend session the call was sent on. */
  readonly backendSession: BackendSessionRecord;
  /** Asks the client `request` in this call (as input_required); false when the call can take none now. */
  askFromStream(request: JsonRpcRequest): boolean;
}

/** What the session holds of a backend's stream for its modern clients (input-stream.ts). */
export interface HeldStream {
  readonly record: BackendSessionRecord;
  close(): void;
}

/** A backend that is not part of the session now: why, and when it may be tried again. */
export interface BackendAbsence {
  /** Why the last try failed (the client sees it). */
  readonly reason: string;
  /** Failed tries in a row. */
  readonly failures: number;
  /** performance.now() of the last try. */
  readonly triedAt: number;
}

/** The listens of a session that has none (shared: never written). */
const NO_LISTENS: ReadonlySet<SessionStream> = new Set();

/** Tasks a session routes at once: a task older than the newest this many is not found. */
const MAX_TASKS = 1024;
/** Longest task id a session routes (a backend names its tasks; one id of megabytes would be kept 1024 times over). */
export const MAX_TASK_ID_LENGTH = 256;
/** Resources a session may subscribe to on one modern backend. */
export const MAX_SUBSCRIPTIONS_PER_BACKEND = 256;

export class AggregatedSession {
  #record: SessionRecord;
  /**
   * Backend name → its session (only the backends that joined): the record's, as a Map, made
   * when first asked for (the record answers a lookup by name without it).
   */
  #backends: Map<string, BackendSessionRecord> | null = null;
  // Made when first needed: most sessions never lose a backend, and an idle session stays small.
  /** Backends whose session stopped working here (the backend said so, or went away). */
  #lost: Set<string> | null = null;
  /** Backends not joined or lost, with their last failed try. */
  #absent: Map<string, BackendAbsence> | null = null;
  /** Joins in progress, by backend: concurrent requests wait for the same one. */
  #joining: Map<string, Promise<BackendSessionRecord>> | null = null;
  // The maps below are made when first written: an idle session (most of them) holds none.
  #lists: Map<ListKind, ListCache> | null = null;

  /** The session's merged lists (lists.ts), until a list_changed or a join empties them. */
  get lists(): Map<ListKind, ListCache> {
    return (this.#lists ??= new Map());
  }
  /** The lists as the session's caller sees them, when plugins have views (made when first needed). */
  viewed: Map<ListKind, ViewedList> | null = null;
  /** The caller's lists a change emptied, until a list-change gate compares them (shown-lists.ts). */
  #shown: Map<ListKind, ListCache> | null = null;

  /** The caller's list of `kind` before the last change, once (undefined: none was made). */
  takeShown(kind: ListKind): ListCache | undefined {
    const list = this.#shown?.get(kind);
    this.#shown?.delete(kind);
    return list;
  }

  #unview(kind: ListKind): void {
    const viewed = this.viewed?.get(kind);
    if (viewed === undefined) return;
    this.viewed!.delete(kind);
    (this.#shown ??= new Map()).set(kind, viewed.list);
  }
  #inflight: Map<JsonRpcId, number> | null = null;
  #tasks: Map<string, number> | null = null;
  #listens: Set<SessionStream> | null = null;

  /** Client request id → index of the backend it was routed to (for notifications/cancelled). */
  get inflight(): Map<JsonRpcId, number> {
    return (this.#inflight ??= new Map());
  }

  /** Task id → backend index (tasks created by routed calls), the newest MAX_TASKS. */
  get tasks(): Map<string, number> {
    return (this.#tasks ??= new Map());
  }

  stream: SessionStream | null = null;

  /** Modern clients' subscriptions/listen streams on this (implicit) session: told when a backend joins. */
  get listens(): ReadonlySet<SessionStream> {
    return this.#listens ?? NO_LISTENS;
  }

  addListen(listen: SessionStream): void {
    (this.#listens ??= new Set()).add(listen);
  }

  removeListen(listen: SessionStream): void {
    this.#listens?.delete(listen);
  }
  /** Bumped on every list invalidation: pagination cursors carry it. */
  listVersion = 0;
  /**
   * The capabilities its initialize answered, in the process that created it (server/discover
   * answers the same). Only these: the rest of that answer is not kept for the session's life.
   */
  initializeCapabilities: Readonly<Record<string, unknown>> | null = null;
  /**
   * What its instructions were made of (same process): server/discover makes them anew for each
   * caller from these, naming only the backends that caller may know (plugin views).
   */
  instructionParts: InstructionParts | null = null;
  /** Modern clients' calls in flight that may be asked for input, by backend (made when first needed). */
  #calls: Map<string, Set<AskableCall>> | null = null;

  /** A modern client's call that may be asked for input was sent to backend `name`. */
  callStarted(name: string, call: AskableCall): void {
    const calls = (this.#calls ??= new Map());
    let set = calls.get(name);
    if (set === undefined) calls.set(name, (set = new Set()));
    set.add(call);
  }

  /** The call ended (answered, failed, or its client left while it was parked). */
  callEnded(name: string, call: AskableCall): void {
    const set = this.#calls?.get(name);
    if (set === undefined || !set.delete(call)) return;
    if (set.size === 0) this.#calls!.delete(name);
  }

  /** The calls in flight on backend `name`'s session `record`. */
  callsOn(name: string, record: BackendSessionRecord): AskableCall[] {
    const set = this.#calls?.get(name);
    return set === undefined ? [] : [...set].filter((call) => call.backendSession === record);
  }

  /**
   * The streams the gateway holds on legacy backends' sessions for its modern clients, by backend
   * (input-stream.ts), or the time one was refused (performance.now()): not asked again at once.
   */
  get heldStreams(): Map<string, HeldStream | { readonly refusedAt: number; readonly record: BackendSessionRecord }> {
    return (this.#heldStreams ??= new Map());
  }

  #heldStreams: Map<string, HeldStream | { readonly refusedAt: number; readonly record: BackendSessionRecord }> | null = null;

  /**
   * Resources subscribed on legacy backends for modern clients' listens (resources/subscribe on
   * the backend session): backend → URI → how many listens follow it. Several listens of one
   * implicit session may follow one resource: the last to end unsubscribes.
   */
  #listenHolds: Map<string, Map<string, number>> | null = null;

  /** A listen follows `uri` on backend `name`. */
  holdSubscription(name: string, uri: string): void {
    const all = (this.#listenHolds ??= new Map());
    let byUri = all.get(name);
    if (byUri === undefined) all.set(name, (byUri = new Map()));
    byUri.set(uri, (byUri.get(uri) ?? 0) + 1);
  }

  /** A listen no longer follows `uri` on backend `name`; true when no listen does any more. */
  releaseSubscription(name: string, uri: string): boolean {
    const byUri = this.#listenHolds?.get(name);
    const listens = byUri?.get(uri);
    if (byUri === undefined || listens === undefined) return false;
    if (listens > 1) {
      byUri.set(uri, listens - 1);
      return false;
    }
    byUri.delete(uri);
    if (byUri.size === 0) this.#listenHolds!.delete(name);
    return true;
  }

  /** Resource URIs the client subscribed to on modern backends (which take listens, not subscribe), by backend. */
  #subscriptions: Map<string, Set<string>> | null = null;
  /** Their URIs' bytes (UTF-8), every backend's together. */
  #subscribedBytes = 0;

  /** The URIs the client subscribed to on a modern backend `name`. */
  subscriptionsOf(name: string): readonly string[] {
    return [...(this.#subscriptions?.get(name) ?? [])];
  }

  /**
   * `resources/subscribe` (or unsubscribe) of `uri` on modern backend `name`: `changed`, `same`
   * when nothing changed, `too large` when keeping it would take the session's subscriptions past
   * `maxBytes` (their URIs, every backend's: they live as long as the session, and all of a
   * backend's go to it again whenever its listen opens), `too many` past
   * MAX_SUBSCRIPTIONS_PER_BACKEND on one backend.
   */
  subscribe(name: string, uri: string, on: boolean, maxBytes: number): 'changed' | 'same' | 'too large' | 'too many' {
    const all = (this.#subscriptions ??= new Map());
    let set = all.get(name);
    if (set === undefined) all.set(name, (set = new Set()));
    if (set.has(uri) === on) return 'same';
    const bytes = Buffer.byteLength(uri);
    if (on) {
      if (set.size >= MAX_SUBSCRIPTIONS_PER_BACKEND) return 'too many';
      if (this.#subscribedBytes + bytes > maxBytes) return 'too large';
      set.add(uri);
      this.#subscribedBytes += bytes;
    } else {
      set.delete(uri);
      this.#subscribedBytes -= bytes;
    }
    return 'changed';
  }

  constructor(record: SessionRecord) {
    this.#record = record;
  }

  /** Backend `name`'s session when it joined (usable or lost). */
  #backend(name: string): BackendSessionRecord | undefined {
    if (this.#backends !== null) return this.#backends.get(name);
    const backends = this.#record.backends;
    return Object.hasOwn(backends, name) ? backends[name] : undefined;
  }

  get id(): string {
    return this.#record.id;
  }

  /** What the store holds for this session. */
  get record(): SessionRecord {
    return this.#record;
  }

  #envelope: ClientEnvelope | null = null;

  /** What the client declared at initialize (and its log level): what a modern backend gets with each request. */
  get envelope(): ClientEnvelope {
    const record = this.#record;
    return (this.#envelope ??= { capabilities: record.clientCapabilities, clientInfo: record.clientInfo, logLevel: record.logLevel ?? null });
  }

  /** The client set its log level (`logging/setLevel`): modern backends are told on each request. */
  setLogLevel(level: string): void {
    this.#record = { ...this.#record, logLevel: level };
    this.#envelope = null;
  }

  /** Every backend that joined, usable or lost. */
  get backends(): ReadonlyMap<string, BackendSessionRecord> {
    return (this.#backends ??= new Map(Object.entries(this.#record.backends)));
  }

  /** The backend's session when it can be used as it is: joined, and not lost. */
  usable(name: string): BackendSessionRecord | undefined {
    return this.#lost?.has(name) === true ? undefined : this.#backend(name);
  }

  /**
   * A routed call created task `taskId` on backend `index`; past MAX_TASKS the oldest is
   * forgotten. An id longer than MAX_TASK_ID_LENGTH is not kept: tasks/* naming it are unknown.
   */
  noteTask(taskId: string, index: number): void {
    if (taskId.length > MAX_TASK_ID_LENGTH) return;
    this.tasks.delete(taskId);
    this.tasks.set(taskId, index);
    if (this.tasks.size > MAX_TASKS) this.tasks.delete(this.tasks.keys().next().value!);
  }

  /** Whether `name` has a usable session in this session. */
  has(name: string): boolean {
    return this.#backend(name) !== undefined && this.#lost?.has(name) !== true;
  }

  /**
   * `record` of backend `name` stopped working: the next use joins it again. A record that was
   * already replaced (another request rejoined first) changes nothing.
   */
  markLost(name: string, record: BackendSessionRecord): void {
    if (this.#backend(name) === record) (this.#lost ??= new Set()).add(name);
  }

  /** The join of backend `name` in progress, if any. */
  joining(name: string): Promise<BackendSessionRecord> | undefined {
    return this.#joining?.get(name);
  }

  /** Records the join of backend `name` in progress until it settles. */
  startJoin(name: string, join: Promise<BackendSessionRecord>): Promise<BackendSessionRecord> {
    const joins = (this.#joining ??= new Map());
    const tracked = join.finally(() => joins.delete(name));
    joins.set(name, tracked);
    return tracked;
  }

  /** Backend `name` joined, for the first time or again: its new session; its lists are stale. */
  joined(name: string, backend: BackendSessionRecord): void {
    this.#backends?.set(name, backend);
    this.#lost?.delete(name);
    this.#absent?.delete(name);
    this.#record = {
      ...this.#record,
      backends: { ...this.#record.backends, [name]: backend },
      missing: this.#record.missing.filter((missing) => missing !== name),
    };
    for (const kind of ['tools', 'prompts', 'resources'] as const) this.invalidate(kind);
  }

  /** A try to join backend `name` failed. */
  absent(name: string, reason: string, now: number): BackendAbsence {
    const absent = (this.#absent ??= new Map());
    const absence = { reason, failures: (absent.get(name)?.failures ?? 0) + 1, triedAt: now };
    absent.set(name, absence);
    return absence;
  }

  /** The last failed try of a backend that is not usable, or undefined. */
  absence(name: string): BackendAbsence | undefined {
    return this.#absent?.get(name);
  }

  invalidate(kind: ListKind): void {
    this.#lists?.delete(kind);
    this.#unview(kind);
    if (kind === 'resources') {
      this.#lists?.delete('resourceTemplates');
      this.#unview('resourceTemplates');
    }
    this.listVersion++;
  }

  close(): void {
    this.stream?.close();
    this.stream = null;
    const held = this.#heldStreams;
    if (held === null) return;
    for (const stream of [...held.values()]) if ('close' in stream) stream.close();
    held.clear();
  }
}
