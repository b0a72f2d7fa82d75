/**
 * The merged lists of an aggregated session: fetched from every backend that has the
 * capability (following each backend's pagination cursors to the end), named (naming.ts),
 * cached per session until a `notifications/<kind>/list_changed`, and served to the client in
 * pages of its own (an opaque cursor tied to the list's version).
 */
import { performance } from 'node:perf_hooks';
import { Buffer } from 'node:buffer';
import { GatewayError } from '../../base/errors.ts';
import { answerTooLarge } from '../../upstream/upstreams.ts';
import { reauthenticationAmong, type BackendLink, type CallResult, type MessageSink } from './backend-link.ts';
import { isModernVersion } from '../../protocol/era.ts';
import type { JsonRpcMessage } from '../../protocol/jsonrpc.ts';
import type { ListKind } from '../../protocol/methods.ts';
import type { AggregationConfig } from '../../config/aggregation-config.ts';
import { jsonSize } from './declarations.ts';
import { buildNameTable, type ExposedItem, type Named, type NameConflict, type NameTable } from './naming.ts';
import type { BackendSessionRecord } from './session-store.ts';
import { LOOKUP_WORK, UriTemplateMatcher, type MatchBudget } from './uri-template.ts';

interface ListSpec {
  readonly method: string;
  /** Key of the array in the result. */
  readonly key: string;
  /** Capability a backend must declare to be asked. */
  readonly capability: string;
}

export const LISTS: Readonly<Record<ListKind, ListSpec>> = {
  tools: { method: 'tools/list', key: 'tools', capability: 'tools' },
  prompts: { method: 'prompts/list', key: 'prompts', capability: 'prompts' },
  resources: { method: 'resources/list', key: 'resources', capability: 'resources' },
  resourceTemplates: { method: 'resources/templates/list', key: 'resourceTemplates', capability: 'resources' },
};

/** Pages a backend may return for one list before the gateway stops following its cursor. */
const MAX_PAGES = 100;
/**
 * Bytes (as JSON) of one backend's list, all its pages: each session caches its lists, so a
 * backend sending more fails that list (left out, named) instead of having every session hold it.
 */
export const MAX_LIST_BYTES = 8 * 1024 * 1024;

export interface Resource {
  readonly uri: string;
}

export interface ResourceTemplate {
  readonly uriTemplate: string;
}

/** What the lists need of a session (AggregatedSession is one): its backends, caches and their version. */
export interface ListedSession {
  readonly backends: ReadonlyMap<string, BackendSessionRecord>;
  readonly lists: Map<ListKind, ListCache>;
  /** Bumped on every invalidation: pagination cursors carry it. */
  readonly listVersion: number;
}

export interface ListCache {
  /** Items as the client sees them, with their owner. */
  readonly items: readonly { readonly backend: string; readonly item: unknown }[];
  /** Tools and prompts: the name table. */
  readonly names: NameTable<Named> | null;
  /** Resources: URI → owner; templates: matcher → owner. */
  readonly uris: ReadonlyMap<string, string> | null;
  readonly templates: readonly { readonly matcher: UriTemplateMatcher; readonly uriTemplate: string; readonly backend: string }[] | null;
  readonly conflicts: readonly NameConflict[];
  /**
   * Resources and templates of a caller's list (list-views.ts): the URIs or URI templates its
   * views hide. Found nowhere, not even through a visible template whose pattern matches them.
   */
  readonly hidden?: ReadonlySet<string>;
  /** False when a backend failed: served, but not kept. */
  readonly complete: boolean;
  /**
   * How long it may be served (ms after `fetchedAt`): the shortest `ttlMs` of its parts, or null
   * when no part limits it (legacy backends, whose list_changed notifications invalidate it).
   * Stale, it is still good for routing a call, and for the next pages of a list being paged.
   */
  readonly ttlMs: number | null;
  /** `private` when any part is (or comes from a backend session of this principal), else `public`. */
  readonly cacheScope: 'public' | 'private';
  /** performance.now() when it was fetched. */
  readonly fetchedAt: number;
  /** The backends whose list failed, with what the client is told of it. */
  readonly failures: ReadonlyMap<string, string>;
  /**
   * Pages already written out (JSON, UTF-8), by offset, for the session's list version
   * `pagesVersion`: a warm list is neither serialized nor encoded again. Only offsets the gateway
   * issues get here (pageOffset), so it holds at most one entry per page.
   */
  readonly pages: Map<number, Buffer>;
  pagesVersion: number;
}

/** Sends one JSON-RPC message to a backend of the session and collects its answer. */
export type ListCall = (link: BackendLink, message: JsonRpcMessage, sink: MessageSink) => Promise<CallResult>;

/** One backend's full list, and what its pages said of caching it. */
interface Fetched {
  readonly items: unknown[];
  readonly ttlMs: number | null;
  readonly cacheScope: 'public' | 'private';
}

/**
 * One backend's full list (all pages). A modern backend's pages say how long they stay fresh
 * (absent: 0, as MCP tells clients to assume) and who may share them; a legacy backend's say
 * nothing: `legacyTtlMs` stands for them, and they are private to the session's principal.
 */
async function fetchAll(link: BackendLink, call: ListCall, spec: ListSpec, sink: MessageSink, modern: boolean, legacyTtlMs: number | null): Promise<Fetched> {
  const items: unknown[] = [];
  let ttlMs: number | null = modern ? Number.POSITIVE_INFINITY : legacyTtlMs;
  let cacheScope: 'public' | 'private' = modern ? 'public' : 'private';
  const done = (): Fetched => ({ items, ttlMs: ttlMs === Number.POSITIVE_INFINITY ? 0 : ttlMs, cacheScope });
  let cursor: string | undefined;
  // The pages are one list the session keeps: bounded in all as one answer is (received), and what
  // is kept of them as the session's list (listed, as JSON).
  let received = 0;
  let listed = 0;
  for (let page = 0; page < MAX_PAGES; page++) {
    const params = cursor === undefined ? {} : { cursor };
    const result = await call(link, { jsonrpc: '2.0', id: `list-${page}`, method: spec.method, params }, sink);
    received += result.bytes;
    if (received > link.backend.maxResponseBytes) throw answerTooLarge(link.backend, `${spec.method} pages`);
    const problem = link.problem(result, spec.method);
    if (problem !== null) throw problem;
    const response = result.response;
    if (response === null) throw new GatewayError('backend_error', `backend "${link.name}" gave no answer to ${spec.method}`, { extra: { backend: link.name } });
    if (response.error !== undefined) throw new GatewayError('backend_error', `backend "${link.name}" failed ${spec.method}: ${response.error.message}`, { extra: { backend: link.name } });
    const body = response.result as Record<string, unknown> | undefined;
    const list = body?.[spec.key];
    if (Array.isArray(list)) {
      listed += jsonSize(list, MAX_LIST_BYTES - listed);
      if (listed > MAX_LIST_BYTES) {
        throw new GatewayError('backend_error', `backend "${link.name}" listed more than ${MAX_LIST_BYTES} bytes of ${spec.key} (as JSON, in ${page + 1} pages)`, { extra: { backend: link.name } });
      }
      items.push(...list);
    }
    if (modern) {
      const given = body?.['ttlMs'];
      ttlMs = Math.min(ttlMs!, typeof given === 'number' && given > 0 ? given : 0);
      if (body?.['cacheScope'] !== 'public') cacheScope = 'private';
    }
    cursor = typeof body?.nextCursor === 'string' && body.nextCursor.length > 0 ? body.nextCursor : undefined;
    if (cursor === undefined) return done();
  }
  return done();
}

/** Whether a list may still be served as it is. */
export function isFresh(cache: ListCache, now: number): boolean {
  return cache.ttlMs === null || now - cache.fetchedAt < cache.ttlMs;
}

/** The cache hints a modern client gets with `cache`: the freshness it has left. */
export function hintsOf(cache: ListCache, now: number, fallbackTtlMs: number): { ttlMs: number; cacheScope: 'public' | 'private' } {
  const left = cache.ttlMs === null ? fallbackTtlMs : cache.ttlMs - (now - cache.fetchedAt);
  return { ttlMs: Math.max(0, Math.floor(left)), cacheScope: cache.cacheScope };
}

function isNamed(item: unknown): item is Named {
  return typeof item === 'object' && item !== null && typeof (item as Named).name === 'string';
}

/** Fetches and names one kind of list for the session (cached until invalidated). */
export async function loadList(
  kind: ListKind,
  session: ListedSession,
  links: readonly BackendLink[],
  config: AggregationConfig,
  call: ListCall,
  sink: (link: BackendLink) => MessageSink,
  onBackendFailure: (link: BackendLink, error: unknown) => void,
  legacyTtlMs: number | null = null,
): Promise<ListCache> {
  const spec = LISTS[kind];
  const asked = links.filter((link) => session.backends.get(link.name)?.capabilities[spec.capability] !== undefined);
  const fetchedAt = performance.now();
  const settled = await Promise.allSettled(
    asked.map((link) => fetchAll(link, call, spec, sink(link), isModernVersion(session.backends.get(link.name)!.protocolVersion), legacyTtlMs)),
  );
  const refusal = reauthenticationAmong(settled);
  if (refusal !== undefined) throw refusal;
  const perBackend = new Map<string, unknown[]>();
  const failures = new Map<string, string>();
  let ttlMs: number | null = null;
  let cacheScope: 'public' | 'private' = 'public';
  settled.forEach((outcome, i) => {
    if (outcome.status === 'fulfilled') {
      perBackend.set(asked[i]!.name, outcome.value.items);
      const part = outcome.value.ttlMs;
      if (part !== null) ttlMs = ttlMs === null ? part : Math.min(ttlMs, part);
      if (outcome.value.cacheScope === 'private') cacheScope = 'private';
    } else {
      const reason = outcome.reason as { description?: string; message?: string } | undefined;
      failures.set(asked[i]!.name, reason?.description ?? reason?.message ?? String(outcome.reason));
      onBackendFailure(asked[i]!, outcome.reason);
    }
  });
  const cache = build(kind, perBackend, config);
  const result: ListCache = { ...cache, complete: failures.size === 0, failures, pages: new Map(), pagesVersion: -1, ttlMs, cacheScope, fetchedAt };
  if (result.complete) session.lists.set(kind, result);
  return result;
}

function build(kind: ListKind, perBackend: Map<string, unknown[]>, config: AggregationConfig): Omit<ListCache, 'complete' | 'failures' | 'pages' | 'pagesVersion' | 'ttlMs' | 'cacheScope' | 'fetchedAt'> {
  if (kind === 'tools' || kind === 'prompts') {
    const lists = new Map<string, Named[]>();
    for (const [backend, items] of perBackend) lists.set(backend, items.filter(isNamed));
    const names = buildNameTable(lists, config, kind === 'tools');
    return { items: names.items.map((e: ExposedItem<Named>) => ({ backend: e.backend, item: e.item })), names, uris: null, templates: null, conflicts: names.conflicts };
  }
  if (kind === 'resources') {
    const uris = new Map<string, string>();
    const items: { backend: string; item: unknown }[] = [];
    for (const [backend, list] of perBackend) {
      for (const item of list) {
        const uri = (item as Resource | null)?.uri;
        if (typeof uri !== 'string' || uris.has(uri)) continue; // the first backend in group order keeps a shared URI
        uris.set(uri, backend);
        items.push({ backend, item });
      }
    }
    return { items, names: null, uris, templates: null, conflicts: [] };
  }
  const templates: { matcher: UriTemplateMatcher; uriTemplate: string; backend: string }[] = [];
  const items: { backend: string; item: unknown }[] = [];
  const seen = new Set<string>();
  for (const [backend, list] of perBackend) {
    for (const item of list) {
      const uriTemplate = (item as ResourceTemplate | null)?.uriTemplate;
      if (typeof uriTemplate !== 'string' || seen.has(uriTemplate)) continue;
      seen.add(uriTemplate);
      templates.push({ matcher: new UriTemplateMatcher(uriTemplate), uriTemplate, backend });
      items.push({ backend, item });
    }
  }
  return { items, names: null, uris: null, templates, conflicts: [] };
}

/**
 * A page of the merged list, in the client's `tools/list` (etc.) result shape; null for a cursor
 * this session did not issue, or one from before the list changed.
 */
export function page(kind: ListKind, cache: ListCache, session: ListedSession, cursor: unknown, pageSize: number): Record<string, unknown> | null {
  const offset = pageOffset(cache, session, cursor, pageSize);
  return offset === null ? null : pageAt(kind, cache, session, offset, pageSize);
}

/**
 * The same page as JSON (UTF-8 bytes), serialized and encoded once per list version and page:
 * what a warm list costs is a lookup and a copy, not the serialization of every item.
 */
export function pageBytes(kind: ListKind, cache: ListCache, session: ListedSession, cursor: unknown, pageSize: number): Buffer | null {
  const offset = pageOffset(cache, session, cursor, pageSize);
  if (offset === null) return null;
  if (cache.pagesVersion !== session.listVersion) {
    // Another list of the session changed (the version is the session's): these pages' cursors did too.
    cache.pages.clear();
    cache.pagesVersion = session.listVersion;
  }
  let bytes = cache.pages.get(offset);
  if (bytes === undefined) {
    bytes = Buffer.from(JSON.stringify(pageAt(kind, cache, session, offset, pageSize)));
    cache.pages.set(offset, bytes);
  }
  return bytes;
}

/**
 * Where a cursor points: a page start the gateway issued for this list version (a multiple of
 * the page size, inside the list); null for any other cursor. Cursors are not signed, so this
 * is what keeps a forged one from choosing an arbitrary offset (and a page cache entry per try).
 */
function pageOffset(cache: ListCache, session: ListedSession, cursor: unknown, pageSize: number): number | null {
  if (cursor === undefined) return 0;
  const decoded = typeof cursor === 'string' && cursor.length <= 64 ? /^(\d{1,15})\.(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString()) : null;
  if (decoded === null || Number(decoded[1]) !== session.listVersion) return null;
  const offset = Number(decoded[2]);
  return pageSize > 0 && offset > 0 && offset % pageSize === 0 && offset < cache.items.length ? offset : null;
}

function pageAt(kind: ListKind, cache: ListCache, session: ListedSession, offset: number, pageSize: number): Record<string, unknown> {
  const end = pageSize > 0 ? Math.min(cache.items.length, offset + pageSize) : cache.items.length;
  const result: Record<string, unknown> = { [LISTS[kind].key]: cache.items.slice(offset, end).map((e) => e.item) };
  if (end < cache.items.length) result.nextCursor = Buffer.from(`${session.listVersion}.${end}`).toString('base64url');
  return result;
}

/**
 * The backend that serves `uri`: the one that listed it, or whose template matches it (templates
 * tried in list order, within one work budget: past it the URI is not found). A URI the caller's
 * views hide is not found.
 */
export function resourceOwner(resources: ListCache | undefined, templates: ListCache | undefined, uri: string): string | null {
  if (resources?.hidden?.has(uri) === true || templates?.hidden?.has(uri) === true) return null;
  const listed = resources?.uris?.get(uri);
  if (listed !== undefined) return listed;
  const budget: MatchBudget = { remaining: LOOKUP_WORK };
  for (const template of templates?.templates ?? []) {
    if (template.matcher.matches(uri, budget)) return template.backend;
    if (budget.remaining <= 0) return null;
  }
  return null;
}
