/**
 * The streams of an aggregated session: a legacy client's GET stream (client-stream.ts
 * multiplexes every backend's stream into it; resumed with Last-Event-ID, each backend where it
 * was), a GET resuming one routed request's stream (that backend replays it), and a modern
 * client's `subscriptions/listen` (the change notifications its filter asks for, from every
 * backend in its own era, listen.ts). A backend that comes back joins the sessions that can hear it.
 */
import type { Chain, HookOutcome } from '../../server/chain.ts';
import type { Context } from '../../plugin-api/context.ts';
import { runHooks } from '../../server/chain.ts';
import { GatewayError } from '../../base/errors.ts';
import type { JsonRpcRequest } from '../../protocol/jsonrpc.ts';
import type { OpenStreams } from '../streams.ts';
import { answerError, INVALID_PARAMS } from './answer.ts';
import type { BackendLink } from './backend-link.ts';
import type { CallRouting } from './call-routing.ts';
import { ClientStream, streamRefusal } from './client-stream.ts';
import type { SessionHealer } from './healing.ts';
import type { HeldStreams } from './held-streams.ts';
import { parseEventId } from './ids.ts';
import { parseFilter } from './listen.ts';
import type { ResumeTickets } from './resume-tickets.ts';
import type { SessionLists } from './session-lists.ts';
import type { ListViews } from './list-views.ts';
import type { AggregatedSession } from './session.ts';
import { ownerKey, type BackendSessionRecord } from './session-store.ts';
import type { Sessions } from './sessions.ts';
import { observeBackend } from './backend-messages.ts';
import { ListChangeGate, tellChanged, type ShownLists } from './shown-lists.ts';

/** subscriptions/listen streams one principal may hold open at once (each holds a stream per backend). */
const MAX_LISTENS_PER_PRINCIPAL = 8;
/** At most this long (ms) to spread the sessions that join a recovered backend over. */
const RECOVERY_SPREAD_MAX_MS = 5_000;

export interface SessionStreamsOptions {
  readonly links: readonly BackendLink[];
  readonly byName: ReadonlyMap<string, BackendLink>;
  readonly chain: Chain;
  readonly streams: OpenStreams;
  readonly sessions: Sessions;
  readonly lists: SessionLists;
  readonly healer: SessionHealer;
  readonly held: HeldStreams;
  readonly routing: CallRouting;
  readonly tickets: ResumeTickets;
  /** The chain's views when some has an admit step (list-views.ts), else null. */
  readonly views: ListViews | null;
}

export class SessionStreams {
  readonly #o: SessionStreamsOptions;
  /** Open subscriptions/listen streams per principal (its owner key; '' for anonymous). */
  readonly #listens = new Map<string, number>();
  /** What the sessions' clients were shown before a reload (shown-lists.ts), until their stream opens here. */
  #shown: Map<string, ShownLists> | null = null;

  /** With plugin views: list changes reach a client only when its own list changed. */
  readonly #gate: ListChangeGate | null;

  constructor(options: SessionStreamsOptions) {
    this.#o = options;
    this.#gate = options.lists.perCaller ? new ListChangeGate(options.lists) : null;
  }

  /** A GET: the session's multiplexed stream, or the resumption of a routed request's stream. */
  async open(ctx: Context): Promise<HookOutcome> {
    if (!(ctx.header('accept') ?? '').includes('text/event-stream')) {
      throw new GatewayError('not_acceptable', 'Not Acceptable: the GET stream needs Accept: text/event-stream');
    }
    const session = await this.#o.sessions.find(ctx);
    const lastEventId = ctx.header('last-event-id');
    const parsed = lastEventId === undefined ? null : parseEventId(lastEventId);
    if (parsed?.kind === 'routed') return this.#resume(ctx, session, parsed.backendIndex, parsed.eventId, parsed.ticket);
    session.stream?.close(); // one standalone stream per session, as backends allow
    const refusal = streamRefusal(session, this.#o.byName);
    if (refusal !== null) return refusal;
    const stream = new ClientStream(ctx, session, this.#o.byName, this.#o.streams, observeBackend, this.#o.healer, parsed?.kind === 'multiplex' ? parsed.positions : new Map(), null, this.#gate);
    session.stream = stream;
    stream.open();
    const shown = this.#shown?.get(session.id);
    if (shown !== undefined) {
      this.#shown!.delete(session.id);
      // A list that fails here was logged where it failed; the client lists again when it can.
      tellChanged(ctx, session, stream, this.#o.lists, shown).catch(() => undefined);
    }
    return undefined;
  }

  /** What the sessions' clients were shown by the generation this one replaces. */
  carryShown(shown: Map<string, ShownLists>): void {
    this.#shown = shown.size === 0 ? null : shown;
  }

  /**
   * Resuming a request's stream: that backend replays it (from the session it was sent on), and
   * the response it may carry is the one the ticket names, if this gateway issued it (resume-tickets.ts).
   */
  async #resume(ctx: Context, session: AggregatedSession, backendIndex: number, eventId: string, token: string | null): Promise<HookOutcome> {
    const link = this.#o.links[backendIndex];
    const backend = link === undefined ? undefined : session.usable(link.name);
    if (link === undefined || backend === undefined) throw new GatewayError('invalid_request', 'Last-Event-ID does not belong to this session');
    if (this.#o.chain.hasResponseHooks) {
      // The replayed response would reach the client without its method's hooks: a resumed
      // stream is a GET, not the request, and runs none of them.
      throw new GatewayError('invalid_request', "Resuming a routed request's stream is not available on a gateway with onResponse hooks: send the request again");
    }
    const headers = await link.headers(ctx, backend, 'text/event-stream', eventId);
    if (headers instanceof GatewayError) return headers;
    const ticket = token === null ? null : this.#o.tickets.open(session.id, link.name, token);
    this.#o.routing.resumeStream(ctx, session, link, backend, headers, ticket);
    return undefined;
  }

  /**
   * A modern client's `subscriptions/listen`: the stream of the change notifications its filter
   * asks for, from every backend of the session in its own era (client-stream.ts, listen.ts).
   */
  async listen(ctx: Context, session: AggregatedSession, request: JsonRpcRequest): Promise<HookOutcome> {
    const who = ctx.principal === null ? '' : ownerKey({ issuer: ctx.principal.issuer, subject: ctx.principal.subject });
    const open = this.#listens.get(who) ?? 0;
    if (open >= MAX_LISTENS_PER_PRINCIPAL) {
      return answerError(ctx, this.#o.chain, request.id, INVALID_PARAMS, `too many subscriptions/listen streams open (at most ${MAX_LISTENS_PER_PRINCIPAL} per principal)`);
    }
    const filter = parseFilter(request.params);
    const owned = await this.#subscriptions(ctx, session, request, filter.resourceSubscriptions);
    const records = [...session.backends.values()];
    const served = (capability: string): boolean => records.some((r) => r.capabilities[capability] !== undefined);
    const honored: Record<string, unknown> = {};
    if (filter.toolsListChanged && served('tools')) honored['toolsListChanged'] = true;
    if (filter.promptsListChanged && served('prompts')) honored['promptsListChanged'] = true;
    if (filter.resourcesListChanged && served('resources')) honored['resourcesListChanged'] = true;
    const subscribed = [...owned.values()].flat();
    if (subscribed.length > 0) honored['resourceSubscriptions'] = subscribed;
    const refusal = streamRefusal(session, this.#o.byName);
    if (refusal !== null) return refusal;
    // What this listen subscribed on legacy backends (backend name → URI → the backend session it
    // last subscribed on: a stream that reconnects to a restarted backend subscribes again): undone when it ends.
    const held = new Map<string, Map<string, BackendSessionRecord>>();
    const subscribe = (link: BackendLink, uris: readonly string[], record: BackendSessionRecord): void => {
      let mine = held.get(link.name);
      if (mine === undefined) held.set(link.name, (mine = new Map()));
      for (const uri of uris) {
        if (!mine.has(uri)) session.holdSubscription(link.name, uri);
        mine.set(uri, record);
        void this.#o.healer.call(ctx, session, link, { jsonrpc: '2.0', id: 'gatehouse-subscribe', method: 'resources/subscribe', params: { uri } }).catch(() => undefined);
      }
    };
    this.#listens.set(who, open + 1);
    const ended = (): void => {
      const left = (this.#listens.get(who) ?? 1) - 1;
      if (left > 0) this.#listens.set(who, left);
      else this.#listens.delete(who);
      this.#unsubscribe(ctx, session, held);
    };
    const asked = (link: BackendLink, record: BackendSessionRecord, asking: JsonRpcRequest): void => this.#o.held.askOnStream(session, link, record, ctx, asking);
    new ClientStream(ctx, session, this.#o.byName, this.#o.streams, observeBackend, this.#o.healer, new Map(), { spec: { subscriptionId: request.id, filter }, honored, owned, subscribe, ended, request: asked }, this.#gate).open();
    return undefined;
  }

  /**
   * The resources a listen follows, by the backend that owns each. Each is a subscription: the
   * views' admit steps, then the onMessage hooks of resources/subscribe decide, as for one a
   * client sends (pipeline.ts).
   */
  async #subscriptions(ctx: Context, session: AggregatedSession, request: JsonRpcRequest, uris: readonly string[]): Promise<Map<string, string[]>> {
    const owned = new Map<string, string[]>();
    const hooks = this.#o.chain.messageHooks('resources/subscribe');
    const views = this.#o.views;
    for (const uri of uris) {
      const owner = await this.#o.lists.resourceOwner(ctx, session, uri);
      if (owner === null) continue;
      if (hooks !== null || views !== null) {
        const target = ctx.target;
        ctx.target = { backend: owner.name, name: uri };
        const subscribe: JsonRpcRequest = { jsonrpc: '2.0', id: request.id, method: 'resources/subscribe', params: { uri } };
        const subject = { kind: 'resources' as const, backend: owner.name, name: uri, original: uri, item: { uri } };
        const refused = (views === null ? undefined : await views.admit(ctx, subject, subscribe)) ?? (hooks === null ? undefined : await runHooks(hooks, ctx, subscribe));
        ctx.target = target;
        if (refused !== undefined) continue;
      }
      owned.set(owner.name, [...(owned.get(owner.name) ?? []), uri]);
    }
    return owned;
  }

  /**
   * A listen ended (the client closed it, or the gateway did): what it subscribed on legacy
   * backends is unsubscribed there, unless another listen of the session still follows it or
   * the backend session it was made on is gone. (Its streams closed with it: a legacy backend's
   * GET stream, a modern backend's listen.) On the listen's credentials, without waiting.
   */
  #unsubscribe(ctx: Context, session: AggregatedSession, held: ReadonlyMap<string, ReadonlyMap<string, BackendSessionRecord>>): void {
    for (const [name, uris] of held) {
      const link = this.#o.byName.get(name);
      if (link === undefined) continue;
      for (const [uri, record] of uris) {
        // A backend session that is gone (the backend restarted) took its subscriptions with it.
        if (!session.releaseSubscription(name, uri) || session.usable(name) !== record) continue;
        void this.#o.healer.send(ctx, session, link, record, { jsonrpc: '2.0', id: 'gatehouse-unsubscribe', method: 'resources/unsubscribe', params: { uri } }).catch(() => undefined);
      }
    }
  }

  /**
   * A backend turned healthy: the sessions here that lack it and have a GET stream (the clients
   * that can hear list_changed) join it now, on their stream's credentials; the others join it
   * on their next request.
   */
  recovered(name: string): void {
    const link = this.#o.byName.get(name);
    if (link === undefined) return;
    // Spread over a few seconds: a backend that just came up is not met by every session at once.
    const spreadMs = Math.min(RECOVERY_SPREAD_MAX_MS, this.#o.sessions.size * 5);
    for (const session of this.#o.sessions.live()) {
      if (session.stream === null || session.has(name)) continue;
      const join = (): void => {
        const stream = session.stream;
        if (stream !== null && !session.has(name)) this.#o.healer.join(stream.ctx, session, link).catch(() => undefined);
      };
      setTimeout(join, Math.random() * spreadMs).unref();
    }
  }
}
