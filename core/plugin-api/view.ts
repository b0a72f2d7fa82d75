/**
 * A plugin's view: what of the group one caller sees and may use (per-user tool policy). The
 * gateway asks the views of the chain once per list and caller, before paging, and keeps what
 * they said with the session's list; an item a view hides is, for that caller, an item that does
 * not exist: left out of every list, and a call of it gets the answer an unknown name gets, byte
 * for byte (no disclosure). Views of several plugins combine: an item is seen when every view
 * sees it, asked in plugin order (the claims filter before Cedar).
 *
 * A view is pure in what it is given: the same `key` with the same items must give the same
 * answer, which is what lets one answer serve every request of a session until the list or the
 * key changes (a token refreshed with other claims, a reload).
 */
import type { Context } from './context.ts';
import type { Reply } from './reply.ts';
import type { GatewayError } from '../base/errors.ts';
import type { JsonRpcRequest } from '../protocol/jsonrpc.ts';
import type { ListKind } from '../protocol/methods.ts';

/** What an admit step answers: a Reply or GatewayError refuses, undefined lets the call through. */
export type Refusal = Reply | GatewayError | undefined | void;

/** One item of a merged list, as a view decides on it. */
export interface ViewItem {
  readonly kind: ListKind;
  /** `metadata.name` of the backend that serves it. */
  readonly backend: string;
  /**
   * What the client names it by: a tool's or prompt's name as the gateway exposes it (prefixed or
   * renamed), a resource's URI, a template's URI template.
   */
  readonly name: string;
  /** The backend's own name of a tool or prompt; the same as `name` for resources and templates. */
  readonly original: string;
  /** The item as the backend listed it (a JSON object: its annotations, schema, description). */
  readonly item: unknown;
}

export interface View {
  /**
   * What of this caller the view reads, as a string: two callers with one key see the same items,
   * so a session keeps one answer per list and key. Asked on every request that lists or names an
   * item, so it must be cheap (keep it per principal object). null: the caller sees everything and
   * may call anything this view would decide on (the view is not asked about it at all).
   */
  key(ctx: Context): string | null;
  /** Whether the caller sees each of `items` (one entry per item, in order). */
  visible(ctx: Context, items: readonly ViewItem[]): ArrayLike<boolean> | Promise<ArrayLike<boolean>>;
  /**
   * Whether the caller may learn that `backend` is part of the group: an answer such as "tool x
   * cannot be called now: backend b is unavailable" names it only then. Absent: never (the caller
   * gets the unknown answer instead).
   */
  knowsBackend?(ctx: Context, backend: string): boolean;
  /**
   * A call of an item the caller sees (tools/call, prompts/get, resources/read, a completion's
   * ref), with the request as the client sent it: a decision that needs the arguments. A Reply or
   * GatewayError refuses it; undefined lets it through.
   */
  admit?(ctx: Context, item: ViewItem, request: JsonRpcRequest): Refusal | Promise<Refusal>;
}
