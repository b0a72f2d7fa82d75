/**
 * What each client was shown of its lists, carried across a reload so that exactly the sessions
 * whose lists changed for them hear `notifications/<kind>/list_changed`. A reload can change a
 * list without any backend saying so: a tool filter or override, the claims of a backend or a
 * tool, a policy. The serving generation's sessions are read at the switch (a digest per list,
 * as the client saw it: its own view when plugins have views); when a session's GET stream opens
 * again on the new generation (the old one ended it), its lists are made anew for that client
 * and compared, and the client is told of each that differs. A modern client's lists carry
 * their own freshness (ttlMs) instead.
 */
import { createHash } from 'node:crypto';
import type { Context } from '../../plugin-api/context.ts';
import type { ListKind } from '../../protocol/methods.ts';
import type { JsonRpcMessage } from '../../protocol/jsonrpc.ts';
import { mcpMethod } from '../../protocol/methods.ts';
import { formatSseEvent } from '../../protocol/sse.ts';
import { tagged, wanted, type ListenSpec } from './listen.ts';
import type { ListCache } from './lists.ts';
import type { SessionLists } from './session-lists.ts';
import type { AggregatedSession } from './session.ts';

/** A session's lists as its client saw them: list kind → digest. */
export type ShownLists = ReadonlyMap<ListKind, string>;

const NOTIFICATION: Readonly<Record<ListKind, string>> = {
  tools: 'notifications/tools/list_changed',
  prompts: 'notifications/prompts/list_changed',
  resources: 'notifications/resources/list_changed',
  resourceTemplates: 'notifications/resources/list_changed',
};

/** The digest of a list as the client gets it (the items, in order). */
export function listDigest(list: ListCache): string {
  const hash = createHash('sha256');
  for (const { item } of list.items) hash.update(JSON.stringify(item) ?? '').update('\n');
  return hash.digest('base64url');
}

/**
 * What the session's client was last shown of each list the session holds: its own view of it
 * when plugins made one (`viewed`), else the list (a caller no view decides on sees all of it).
 * Null when it was shown none.
 */
export function shownBy(session: AggregatedSession): ShownLists | null {
  const shown = new Map<ListKind, string>();
  for (const [kind, list] of session.lists) {
    const viewed = session.viewed?.get(kind);
    shown.set(kind, listDigest(viewed?.source === list ? viewed.list : list));
  }
  return shown.size === 0 ? null : shown;
}

/**
 * Makes the session's lists anew for the client of `stream` and tells it of each that differs
 * from what it was shown (one notification per kind of notification).
 */
export async function tellChanged(ctx: Context, session: AggregatedSession, stream: { tell(message: JsonRpcMessage): void }, lists: SessionLists, shown: ShownLists): Promise<void> {
  const told = new Set<string>();
  for (const [kind, digest] of shown) {
    const method = NOTIFICATION[kind];
    if (told.has(method)) continue;
    const now = await lists.list(ctx, session, kind);
    if (listDigest(now) === digest) continue;
    told.add(method);
    stream.tell({ jsonrpc: '2.0', method });
  }
}

/**
 * A backend's `notifications/<kind>/list_changed` on its way to a client when plugins have views:
 * the client is told only when the list changed *for it*. The list it was last shown (kept when
 * the notification emptied the session's cache, AggregatedSession.invalidate) is compared with
 * the one made anew for it; a client that was shown none is told, as without views. What the
 * client would have listed next is what is made here: told, its `tools/list` finds it cached.
 */
export class ListChangeGate {
  readonly #lists: SessionLists;

  constructor(lists: SessionLists) {
    this.#lists = lists;
  }

  /**
   * Whether `message` is a list_changed this gate holds (a client stream then writes nothing of
   * it): `write` gets it, as the gateway's own (tagged for a subscription), only if the list
   * changed for the caller of `ctx`.
   */
  holds(ctx: Context, session: AggregatedSession, message: JsonRpcMessage, listen: ListenSpec | null, write: (text: string) => void): boolean {
    if (!('method' in message) || 'id' in message) return false;
    const kind = mcpMethod(message.method)?.list;
    if (kind === undefined || kind === null) return false;
    if (listen !== null && !wanted(listen.filter, message)) return true;
    const told: JsonRpcMessage = { jsonrpc: '2.0', method: message.method };
    const text = formatSseEvent({ event: 'message', data: JSON.stringify(listen === null ? told : tagged(told, listen.subscriptionId)) });
    this.check(ctx, session, kind, () => write(text));
    return true;
  }

  /** `tell` runs when the list of `kind` (resources: with its templates) changed for the caller of `ctx`. */
  check(ctx: Context, session: AggregatedSession, kind: ListKind, tell: () => void): void {
    const kinds: readonly ListKind[] = kind === 'resources' ? ['resources', 'resourceTemplates'] : [kind];
    const before = kinds.map((k) => session.takeShown(k));
    if (before.some((list) => list === undefined)) return tell();
    void (async () => {
      for (const [i, k] of kinds.entries()) {
        if (listDigest(await this.#lists.list(ctx, session, k)) !== listDigest(before[i]!)) return tell();
      }
    })().catch(() => tell());
  }
}
