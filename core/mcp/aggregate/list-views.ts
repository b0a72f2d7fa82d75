/**
 * A session's merged lists as one caller sees them, when plugins have views (plugin-api/view.ts:
 * per-user tool policy). The views decide on the whole list before it is paged, so no page comes
 * out short or empty with a cursor; what they hide is taken out of the name table and the URI
 * maps too, so a call of a hidden item finds nothing and gets the answer of an unknown one, from
 * the same code (resolver.ts). A caller's list is kept with the session next to the full one, for
 * as long as both the full list and the caller's key are the same.
 */
import type { Context } from '../../plugin-api/context.ts';
import type { HookOutcome } from '../../server/chain.ts';
import type { View, ViewItem } from '../../plugin-api/view.ts';
import { isPromise } from '../../base/thenable.ts';
import type { JsonRpcRequest } from '../../protocol/jsonrpc.ts';
import type { ListKind } from '../../protocol/methods.ts';
import type { ListCache, Resource } from './lists.ts';
import type { ExposedItem, Named } from './naming.ts';

/** A caller's list: the full list it was made of, and the key it was made for. */
export interface ViewedList {
  readonly source: ListCache;
  readonly key: string;
  readonly list: ListCache;
}

/** What the views need of a session (AggregatedSession is one). */
export interface ViewedSession {
  readonly lists: ReadonlyMap<ListKind, ListCache>;
  viewed: Map<ListKind, ViewedList> | null;
}

/** Each view's key for one caller (null: that view lets the caller see everything). */
type Keys = readonly (string | null)[];

export class ListViews {
  readonly #views: readonly View[];

  /** The one view, when there is one (the usual case): its key is the caller's, with nothing made per request. */
  readonly #single: View | null;

  constructor(views: readonly View[]) {
    this.#views = views;
    this.#single = views.length === 1 ? views[0]! : null;
  }

  /** The caller's key: the views' keys joined; null when no view decides on the caller. */
  #key(ctx: Context): string | null {
    return this.#single !== null ? this.#single.key(ctx) : this.#keys(ctx).key;
  }

  /** The views' keys for the caller, and their join; a null join when no view decides on the caller. */
  #keys(ctx: Context): { keys: Keys; key: string | null } {
    if (this.#single !== null) {
      const key = this.#single.key(ctx);
      return { keys: [key], key };
    }
    const keys = this.#views.map((view) => view.key(ctx));
    let key: string | null = null;
    keys.forEach((k, i) => {
      // Length-prefixed, so that two views' keys cannot run into each other.
      if (k !== null) key = `${key ?? ''}${i}:${k.length}:${k}\n`;
    });
    return { keys, key };
  }

  /** The caller's list of a kind, when the session holds it for the caller's key now (no promise). */
  cached(ctx: Context, session: ViewedSession, kind: ListKind): ListCache | undefined {
    const full = session.lists.get(kind);
    if (full === undefined) return undefined;
    const key = this.#key(ctx);
    if (key === null) return full;
    const kept = session.viewed?.get(kind);
    return kept !== undefined && kept.source === full && kept.key === key ? kept.list : undefined;
  }

  /** `full` as the caller sees it: kept with the session while the full list (complete) and the caller's key hold. */
  of(ctx: Context, session: ViewedSession, kind: ListKind, full: ListCache): ListCache | Promise<ListCache> {
    const { keys, key } = this.#keys(ctx);
    if (key === null) return full;
    const kept = session.viewed?.get(kind);
    if (kept !== undefined && kept.source === full && kept.key === key) return kept.list;
    const items = viewItems(kind, full);
    const keep = (seen: boolean[]): ListCache => {
      const list = narrowed(full, items, seen);
      if (full.complete) (session.viewed ??= new Map()).set(kind, { source: full, key, list });
      return list;
    };
    const seen = this.#decide(ctx, keys, items);
    return isPromise(seen) ? seen.then(keep) : keep(seen);
  }

  /** Every deciding view's answer, and-ed: an item is seen when each view sees it. */
  #decide(ctx: Context, keys: Keys, items: readonly ViewItem[]): boolean[] | Promise<boolean[]> {
    const seen = new Array<boolean>(items.length).fill(true);
    const apply = (answer: ArrayLike<boolean>): void => {
      for (let i = 0; i < seen.length; i++) if (answer[i] !== true) seen[i] = false;
    };
    const pending: Promise<void>[] = [];
    this.#views.forEach((view, i) => {
      if (keys[i] === null || items.length === 0) return;
      const answer = view.visible(ctx, items);
      if (isPromise(answer)) pending.push(answer.then(apply));
      else apply(answer);
    });
    return pending.length === 0 ? seen : Promise.all(pending).then(() => seen);
  }

  /** Whether the caller sees one item that is in no list (a resource read through a template): every deciding view is asked. */
  sees(ctx: Context, item: ViewItem): boolean | Promise<boolean> {
    const { keys } = this.#keys(ctx);
    const seen = this.#decide(ctx, keys, [item]);
    return isPromise(seen) ? seen.then((answer) => answer[0] === true) : seen[0] === true;
  }

  /**
   * Whether every view that decides on the caller lets it learn that `backend` is in the group
   * (named in "cannot be called now" answers); a view that does not say, does not.
   */
  knowsBackend(ctx: Context, backend: string): boolean {
    const { keys } = this.#keys(ctx);
    return this.#views.every((view, i) => keys[i] === null || view.knowsBackend?.(ctx, backend) === true);
  }

  /** The views' admit steps for a call of `item` (one the caller sees): the first refusal answers. */
  admit(ctx: Context, item: ViewItem, request: JsonRpcRequest): HookOutcome | Promise<HookOutcome> {
    const single = this.#single;
    if (single !== null) return single.admit === undefined || single.key(ctx) === null ? undefined : single.admit(ctx, item, request);
    const { keys } = this.#keys(ctx);
    return this.#admitFrom(ctx, keys, item, request, 0);
  }

  #admitFrom(ctx: Context, keys: Keys, item: ViewItem, request: JsonRpcRequest, from: number): HookOutcome | Promise<HookOutcome> {
    for (let i = from; i < this.#views.length; i++) {
      const admit = this.#views[i]!.admit;
      if (admit === undefined || keys[i] === null) continue;
      const outcome = admit.call(this.#views[i], ctx, item, request);
      if (isPromise(outcome)) return outcome.then((settled) => (settled === undefined ? this.#admitFrom(ctx, keys, item, request, i + 1) : settled));
      if (outcome !== undefined) return outcome;
    }
    return undefined;
  }

  /** True when some view has an admit step (a call then needs the item it names). */
  get admits(): boolean {
    return this.#views.some((view) => view.admit !== undefined);
  }
}

/** The items of a list as views see them, in list order. */
export function viewItems(kind: ListKind, list: ListCache): ViewItem[] {
  if (list.names !== null) {
    return list.names.items.map((e: ExposedItem<Named>) => ({ kind, backend: e.backend, name: e.name, original: e.original, item: e.item }));
  }
  if (list.templates !== null) {
    return list.templates.map((t, i) => ({ kind, backend: t.backend, name: t.uriTemplate, original: t.uriTemplate, item: list.items[i]!.item }));
  }
  return list.items.map((e) => {
    const uri = (e.item as Resource).uri;
    return { kind, backend: e.backend, name: uri, original: uri, item: e.item };
  });
}

/**
 * `full` with only the items `seen`: its name table, URI map and templates too. Private to the
 * caller's principal, whatever its parts said (a modern client's cacheScope).
 */
function narrowed(full: ListCache, items: readonly ViewItem[], seen: readonly boolean[]): ListCache {
  const base = { ...full, cacheScope: 'private' as const, pages: new Map<number, Buffer>(), pagesVersion: -1 };
  if (full.names !== null) {
    const exposed = full.names.items.filter((_, i) => seen[i]);
    const byName = new Map(exposed.map((e) => [e.name, e] as const));
    // Conflicts name the items involved: only those among what the caller sees are kept.
    const conflicts = full.conflicts.filter((c) => byName.has(c.name));
    // The names hidden, so that a call of one is known as refused (the client is told it is unknown).
    const hidden = new Set(full.names.items.filter((_, i) => !seen[i]).map((e) => e.name));
    return { ...base, items: exposed.map((e) => ({ backend: e.backend, item: e.item })), names: { items: exposed, byName, conflicts }, conflicts, hidden };
  }
  const kept = full.items.filter((_, i) => seen[i]);
  // What is hidden stays known as such: a visible template matching a hidden resource's URI (or a
  // hidden template's text, as a completion's ref) must not reach it (resourceOwner).
  const hidden = new Set(items.filter((_, i) => !seen[i]).map((item) => item.name));
  if (full.templates !== null) return { ...base, items: kept, templates: full.templates.filter((_, i) => seen[i]), hidden };
  const uris = new Map<string, string>();
  items.forEach((item, i) => {
    if (seen[i]) uris.set(item.name, item.backend);
  });
  return { ...base, items: kept, uris, hidden };
}
