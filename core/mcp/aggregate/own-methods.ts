/**
 * The requests an aggregated gateway answers itself, as the MCP server the client sees: the
 * merged lists (paged: the gateway's own cursors), `server/discover`, `ping`, and
 * `logging/setLevel` (sent on to every backend that logs); `subscriptions/listen` opens a
 * stream (session-streams.ts). Anything else unrouted is "method not found".
 */
import { performance } from 'node:perf_hooks';
import { Buffer } from 'node:buffer';
import type { Chain, HookOutcome } from '../../server/chain.ts';
import type { Context } from '../../plugin-api/context.ts';
import { Reply } from '../../plugin-api/reply.ts';
import { isModernVersion, META } from '../../protocol/era.ts';
import { idJson, type JsonRpcRequest } from '../../protocol/jsonrpc.ts';
import { mcpMethod, type ListKind } from '../../protocol/methods.ts';
import { answer, answerError, INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND } from './answer.ts';
import type { BackendLink } from './backend-link.ts';
import { sinkFor } from './backend-messages.ts';
import type { AggregationConfig } from '../../config/aggregation-config.ts';
import type { SessionHealer } from './healing.ts';
import { hintsOf, page, pageBytes } from './lists.ts';
import { discoverResult, serverInfo, withCacheHints } from './modern-answers.ts';
import { IMPLICIT_LIST_TTL_MS, type SessionLists } from './session-lists.ts';
import type { SessionStreams } from './session-streams.ts';
import type { AggregatedSession } from './session.ts';
import type { SessionStore } from './session-store.ts';

/** The end of a JSON-RPC response around a page's bytes. */
const CLOSE_BRACE = Buffer.from('}');

/** A log level a client may set: one of MCP's words. */
const LOG_LEVEL = /^[a-z]{1,16}$/;

export interface OwnMethodsOptions {
  /** `metadata.name` of the VirtualMCPServer (the serverInfo name clients see). */
  readonly name: string;
  readonly links: readonly BackendLink[];
  readonly chain: Chain;
  readonly store: SessionStore;
  readonly aggregation: AggregationConfig;
  readonly lists: SessionLists;
  readonly healer: SessionHealer;
  readonly streams: SessionStreams;
}

export class OwnMethods {
  readonly #o: OwnMethodsOptions;
  /** The `_meta` of the gateway's own results to modern clients, as JSON. */
  readonly #serverMeta: string;

  constructor(options: OwnMethodsOptions) {
    this.#o = options;
    this.#serverMeta = JSON.stringify({ [META.serverInfo]: serverInfo(options.name) });
  }

  /** A request no backend is routed (its resolve step found none to route to). */
  answer(ctx: Context, session: AggregatedSession, request: JsonRpcRequest): HookOutcome | Promise<HookOutcome> {
    const entry = mcpMethod(request.method);
    if (entry?.kind === 'list') return this.#list(ctx, session, request, entry.list!);
    const chain = this.#o.chain;
    switch (request.method) {
      case 'subscriptions/listen':
        if (ctx.envelope !== null) return this.#o.streams.listen(ctx, session, request);
        break;
      case 'server/discover':
        // Asked inside a legacy session too: a dual-era client may probe before it falls back.
        return answer(ctx, chain, { jsonrpc: '2.0', id: request.id, result: discoverResult(session, this.#o.name, this.#o.links, { ttlMs: IMPLICIT_LIST_TTL_MS, cacheScope: 'private' }, (backend) => this.#o.lists.knowsBackend(ctx, backend)) });
      case 'ping':
        return answer(ctx, chain, { jsonrpc: '2.0', id: request.id, result: {} });
      case 'logging/setLevel':
        return this.#setLevel(ctx, session, request);
    }
    return answerError(ctx, chain, request.id, METHOD_NOT_FOUND, `Method not found: ${request.method}`);
  }

  /** A page of a merged list. A first page is served fresh (each part's ttlMs); the next pages come from the same list. */
  async #list(ctx: Context, session: AggregatedSession, request: JsonRpcRequest, list: ListKind): Promise<HookOutcome> {
    const cursor = request.params?.cursor;
    const cache = await this.#o.lists.list(ctx, session, list, cursor === undefined);
    const pageSize = this.#o.aggregation.pageSize;
    let hints = ctx.envelope === null ? null : hintsOf(cache, performance.now(), IMPLICIT_LIST_TTL_MS);
    if (hints !== null && this.#o.lists.perCaller) hints = { ...hints, cacheScope: 'private' };
    if (this.#o.chain.responseHooks(request.method) === null) {
      // No hook wants the object: the page's bytes, serialized once per list version.
      const bytes = pageBytes(list, cache, session, cursor, pageSize);
      if (bytes !== null) {
        const head = Buffer.from(`{"jsonrpc":"2.0","id":${idJson(request.id)},"result":`);
        // A modern client's hints (the freshness left) differ at each request: written into the text.
        const result = hints === null ? bytes : Buffer.from(withCacheHints(bytes.toString(), hints, this.#serverMeta));
        return new Reply(200, Buffer.concat([head, result, CLOSE_BRACE]), { 'content-type': 'application/json' });
      }
    }
    const result = page(list, cache, session, cursor, pageSize);
    if (result === null) return answerError(ctx, this.#o.chain, request.id, INVALID_PARAMS, 'Invalid cursor: list again from the start');
    return answer(ctx, this.#o.chain, { jsonrpc: '2.0', id: request.id, result: hints === null ? result : { ...result, resultType: 'complete', ...hints, _meta: JSON.parse(this.#serverMeta) as unknown } });
  }

  /** `logging/setLevel`: kept by the session (modern backends have no session to set it on: they are told with each request), and sent to every legacy backend that logs. */
  async #setLevel(ctx: Context, session: AggregatedSession, request: JsonRpcRequest): Promise<HookOutcome> {
    const level = request.params?.level;
    if (typeof level === 'string' && LOG_LEVEL.test(level)) {
      session.setLogLevel(level);
      await this.#o.store.update(session.record);
    }
    const targets = this.#o.links.filter((link) => {
      const backend = session.backends.get(link.name);
      return backend !== undefined && backend.capabilities['logging'] !== undefined && !isModernVersion(backend.protocolVersion);
    });
    const results = await Promise.allSettled(targets.map((link) => this.#o.healer.call(ctx, session, link, request, sinkFor(session, link.index))));
    const failed = results.flatMap((r, i) => (r.status === 'rejected' || r.value.response?.error !== undefined ? [targets[i]!.name] : []));
    if (failed.length > 0 && failed.length === targets.length) {
      // Named only as far as the views let the caller know them (plugin views).
      const named = failed.filter((name) => this.#o.lists.knowsBackend(ctx, name));
      return answerError(ctx, this.#o.chain, request.id, INTERNAL_ERROR, `${request.method} failed on every backend${named.length === 0 ? '' : `: ${named.join(', ')}`}`);
    }
    return answer(ctx, this.#o.chain, { jsonrpc: '2.0', id: request.id, result: {} });
  }
}
