/**
 * Pages through one list of a peer registry (`GET <url>/v0.1/servers` or `/v0.1/skills`,
 * official MCP registry API v0.1), following `metadata.nextCursor`, 100 items a page.
 *
 * A page that is not what the API promises fails the whole list, naming the page: not 2xx, not
 * JSON, not `{"<list>": [...], "metadata": {...}}`, a cursor already followed (a loop), a cursor
 * over 4096 characters, more than 5 empty pages in a row that still point further, or more
 * items or bytes than the read allows. Items are returned as they are; judging them is the
 * caller's (one bad item is skipped, not fatal).
 */
import { jsonValueBound } from '../model/json-value.ts';
import { PeerHttp, PeerHttpError, shortUrl } from './api-http.ts';

export type ListName = 'servers' | 'skills';

export interface ListRequest {
  readonly list: ListName;
  readonly updatedSince: string | null;
  readonly includeDeleted: boolean;
}

/** What the whole read may still take; lists of one read share it. */
export interface ReadBudget {
  items: number;
  bytes: number;
  /** JSON values of the pages read (an upper bound, counted before each page is parsed). */
  values: number;
  readonly maxItems: number;
  readonly maxBytes: number;
  readonly maxValues: number;
}

export interface RawItem {
  /** 1-based page and item numbers, for messages. */
  readonly page: number;
  readonly index: number;
  readonly raw: unknown;
}

export type ListResult =
  | { readonly type: 'items'; readonly items: readonly RawItem[] }
  /** The first page answered this status (the caller decides: 404 on skills, 400 on updated_since). */
  | { readonly type: 'refused'; readonly status: number };

/** A list that cannot be read: the message names the page and the problem. */
export class ListFailure extends Error {
  override readonly name = 'ListFailure';
}

export const PAGE_LIMIT = 100;
const MAX_CURSOR_LENGTH = 4096;
const MAX_EMPTY_PAGES = 5;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `<base>/v0.1/<list>?limit=100&…` */
export function listUrl(base: URL, request: ListRequest, cursor: string | null): URL {
  const url = new URL(`${base.href.replace(/\/+$/, '')}/v0.1/${request.list}`);
  url.searchParams.set('limit', String(PAGE_LIMIT));
  if (request.updatedSince !== null) url.searchParams.set('updated_since', request.updatedSince);
  if (request.includeDeleted) url.searchParams.set('include_deleted', 'true');
  if (cursor !== null) url.searchParams.set('cursor', cursor);
  return url;
}

/**
 * Reads every page of one list. `refusable` statuses of the first page are returned as
 * `refused` instead of failing.
 */
export async function readList(
  http: PeerHttp,
  base: URL,
  request: ListRequest,
  budget: ReadBudget,
  signal: AbortSignal,
  deadline: number,
  refusable: readonly number[],
): Promise<ListResult> {
  const items: RawItem[] = [];
  const followed = new Set<string>();
  let cursor: string | null = null;
  let emptyInARow = 0;
  for (let page = 1; ; page++) {
    const url = listUrl(base, request, cursor);
    const where = `${request.list} page ${page} (${shortUrl(url)})`;
    const fail = (problem: string): ListFailure => new ListFailure(`${where}: ${problem}`);
    let response;
    try {
      response = await http.get(url, signal, deadline);
    } catch (err) {
      if (err instanceof PeerHttpError) throw fail(err.message);
      throw err;
    }
    if (response.status < 200 || response.status > 299) {
      if (page === 1 && refusable.includes(response.status)) return { type: 'refused', status: response.status };
      const hint = response.status === 401 || response.status === 403 ? ' (the peer refused the token: check the source\'s tokenSecretRef)' : '';
      throw fail(`the peer answered ${response.status}${hint}`);
    }
    budget.bytes += response.body.length;
    if (budget.bytes > budget.maxBytes) throw fail(`the read is over its bound of ${budget.maxBytes} bytes in all`);
    // Parsed, a page takes up to ~20 times its size: what it holds is bounded before it is parsed.
    budget.values += jsonValueBound(response.body);
    if (budget.values > budget.maxValues) throw fail(`the read holds more than ${budget.maxValues} JSON values: it is refused before they are parsed`);

    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(response.body);
    } catch {
      throw fail('the answer is not UTF-8 text');
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      // Not the parser's message: it quotes the body, which may echo the token.
      throw fail('the answer is not JSON');
    }
    if (!isObject(body) || !Array.isArray(body[request.list])) throw fail(`the answer is not a list: expected {"${request.list}": [...], "metadata": {"nextCursor", "count"}}`);
    const metadata = body.metadata;
    if (metadata !== undefined && metadata !== null && !isObject(metadata)) throw fail('metadata must be an object');
    const next = isObject(metadata) ? metadata.nextCursor : undefined;
    if (next !== undefined && next !== null && typeof next !== 'string') throw fail('metadata.nextCursor must be a string');

    const list = body[request.list] as unknown[];
    budget.items += list.length;
    if (budget.items > budget.maxItems) throw fail(`the peer lists more than ${budget.maxItems} items: the read is refused (raise the source's item bound if that is expected)`);
    list.forEach((raw, i) => items.push({ page, index: i + 1, raw }));

    if (next === undefined || next === null || next === '') return { type: 'items', items };
    if (next.length > MAX_CURSOR_LENGTH) throw fail(`metadata.nextCursor is longer than ${MAX_CURSOR_LENGTH} characters`);
    if (followed.has(next)) throw fail('metadata.nextCursor is a cursor already followed: the pages loop');
    emptyInARow = list.length === 0 ? emptyInARow + 1 : 0;
    if (emptyInARow > MAX_EMPTY_PAGES) throw fail(`more than ${MAX_EMPTY_PAGES} empty pages in a row still give a next cursor`);
    followed.add(next);
    cursor = next;
  }
}
