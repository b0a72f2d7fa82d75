/**
 * The merged lists of a session as the other steps ask for them (lists.ts builds them): cached
 * per session, the backends the session lacks tried first when their retry is due, the backend
 * that serves a resource URI, and, when plugins have views, each list as the caller sees it
 * (list-views.ts): every step below serves, pages and routes by that one.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Context } from '../../plugin-api/context.ts';
import type { ListKind } from '../../protocol/methods.ts';
import type { BackendLink } from './backend-link.ts';
import { sinkFor } from './backend-messages.ts';
import type { AggregationConfig } from '../../config/aggregation-config.ts';
import type { SessionHealer } from './healing.ts';
import { isFresh, loadList, resourceOwner, type ListCache } from './lists.ts';
import type { ListViews } from './list-views.ts';
import type { AggregatedSession } from './session.ts';
import { sessionTag } from './session-store.ts';

/** How long a legacy backend's list stays fresh for a modern client, which hears no list_changed. */
export const IMPLICIT_LIST_TTL_MS = 60_000;

export interface SessionListsOptions {
  readonly links: readonly BackendLink[];
  readonly byName: ReadonlyMap<string, BackendLink>;
  readonly aggregation: AggregationConfig;
  readonly healer: SessionHealer;
  readonly log: Logger;
  /** The chain's views; null when no plugin filters what callers see. */
  readonly views: ListViews | null;
}

export class SessionLists {
  readonly #o: SessionListsOptions;

  constructor(options: SessionListsOptions) {
    this.#o = options;
  }

  /**
   * A merged list: cached per session; the backends the session lacks are tried first when due.
   * To be served (`fresh`) it must be within its freshness; to route a call any cached one does.
   */
  async list(ctx: Context, session: AggregatedSession, kind: ListKind, fresh = false): Promise<ListCache> {
    const full = await this.#full(ctx, session, kind, fresh);
    return this.#o.views === null ? full : this.#o.views.of(ctx, session, kind, full);
  }

  /**
   * The caller's list when the session has it now, with no backend asked and no promise (every
   * backend joined, and the caller's view of it made): undefined otherwise.
   */
  cached(ctx: Context, session: AggregatedSession, kind: ListKind): ListCache | undefined {
    if (session.record.missing.length > 0) return undefined;
    return this.#o.views === null ? session.lists.get(kind) : this.#o.views.cached(ctx, session, kind);
  }

  /**
   * Whether the lists depend on who asks (plugins have views): then none may be shared between
   * principals, not even one no view narrowed for this caller (others get less of it).
   */
  get perCaller(): boolean {
    return this.#o.views !== null;
  }

  /** Whether an answer may name backend `name` to the caller (always, unless views say otherwise). */
  knowsBackend(ctx: Context, name: string): boolean {
    return this.#o.views === null || this.#o.views.knowsBackend(ctx, name);
  }

  /** The whole list, as the backends give it. */
  async #full(ctx: Context, session: AggregatedSession, kind: ListKind, fresh: boolean): Promise<ListCache> {
    if (session.record.missing.length > 0) await this.#o.healer.joinMissing(ctx, session);
    const cached = session.lists.get(kind);
    if (cached !== undefined && (!fresh || isFresh(cached, performance.now()))) return cached;
    return loadList(
      kind,
      session,
      this.#o.links,
      this.#o.aggregation,
      (link, message, sink) => this.#o.healer.call(ctx, session, link, message, sink),
      (link) => sinkFor(session, link.index),
      (link, error) => this.#o.log.warn({ backend: link.name, err: error, session: sessionTag(session.id) }, `${kind} of backend ${link.name} left out: it failed`),
      // A modern client's legacy backends send it no list_changed: their lists age out instead.
      session.record.modern === true ? IMPLICIT_LIST_TTL_MS : null,
    );
  }

  /** The backend that serves `uri` (a listed resource, or one a template matches), or null. */
  async resourceOwner(ctx: Context, session: AggregatedSession, uri: string): Promise<BackendLink | null> {
    const [resources, templates] = await Promise.all([this.list(ctx, session, 'resources'), this.list(ctx, session, 'resourceTemplates')]);
    const owner = resourceOwner(resources, templates, uri);
    if (owner === null) return null;
    const views = this.#o.views;
    if (views !== null && resources.uris?.get(uri) === undefined) {
      // Served through a template: the views decide on the concrete URI too, and a resource the
      // full list has (which the caller's list does not, so it is hidden) is never reached this way.
      if (session.lists.get('resources')?.uris?.has(uri) === true) return null;
      if (!(await views.sees(ctx, { kind: 'resources', backend: owner, name: uri, original: uri, item: { uri } }))) return null;
    }
    return this.#o.byName.get(owner) ?? null;
  }
}
