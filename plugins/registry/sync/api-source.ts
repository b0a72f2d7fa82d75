/**
 * The API source: mirrors another registry through the official MCP registry API v0.1
 * (`GET <url>/v0.1/servers?cursor=&limit=&updated_since=&include_deleted=`), and its skills
 * when the peer also serves `<url>/v0.1/skills` (a Gatehouse registry; a 404 there means none).
 *
 * - A first read, a read after the peer's URL changed, one whose last full read is older than
 *   `fullSyncEveryMs` (24 h), or one whose revision cannot be read pages through everything:
 *   a snapshot (deleted versions are not part of it). The periodic full read makes a mirror
 *   converge even when the peer lost tombstones or served a change with an earlier time.
 * - Other reads ask for what changed since the high-water mark minus `overlapMs` (60 s: a change
 *   committed late with an earlier time is still seen; what is seen twice is harmless, the
 *   writer compares digests), deleted versions included: those are `removed`. When only what was
 *   already seen comes back (the revision's tail digest), the read is `unchanged`. A peer that
 *   refuses `updated_since` (400) gets a full read instead.
 * - An invalid item is skipped and named (`page 3 item 17 (io.github.x/y 1.0.0): …`); a bad page
 *   fails the read (SyncFailure naming the page and the problem), and the source keeps its last
 *   good data. Every request, page and the whole read are bounded in time and size, and the
 *   JSON values of the pages are counted before each is parsed (parsed, a page of `{},{},…`
 *   takes ~20 times its size: 256 MiB of them would take the process's whole heap).
 * - Addresses go through the incoming auth's guard: unless `allowPrivateAddresses` (sources of
 *   the config file), private, loopback and link-local addresses are refused, and only https is
 *   spoken. The token goes to the peer's origin only and never appears in a message.
 */
import { MAX_SYNCED_JSON_VALUES } from '../model/json-value.ts';
import type { SyncItem } from '../store/source-sync-writer.ts';
import { PeerHttp } from './api-http.ts';
import { checkPeerItem, type PeerItem } from './api-item.ts';
import { ListFailure, readList, type ListName, type RawItem, type ReadBudget } from './api-listing.ts';
import { formatRevision, parseRevision, peerDigest, tailDigest, type ApiRevision } from './api-revision.ts';
import { SyncFailure, type ReadContext, type ReadOutcome, type SourceReader } from './source-reader.ts';
import { contentDigest } from './upstream-file.ts';

export interface ApiReaderSettings {
  /** Base URL of the peer (`https://registry.modelcontextprotocol.io`, `http://host:port/myregistry`): the reader calls `<url>/v0.1/servers`. */
  readonly url: string;
  /** Bearer token for the peer (from a secret), or null. */
  readonly token: string | null;
}

export interface ApiReaderOptions {
  /** Bound of one request, headers and body (default 10 s). */
  readonly requestTimeoutMs?: number;
  /** Bound of one whole read, every page and retry included (default 5 minutes). */
  readonly syncTimeoutMs?: number;
  /** Largest page (default 8 MiB). */
  readonly maxPageBytes?: number;
  /** Largest read in all: items are held until they are written (default 256 MiB). */
  readonly maxTotalBytes?: number;
  /** Most items one read may list, deleted and invalid ones included (default 100,000). */
  readonly maxItems?: number;
  /** Most JSON values one read's pages may hold, counted before they are parsed (default 4,000,000). */
  readonly maxValues?: number;
  /** Whether private, loopback and link-local addresses, and plain http, are allowed (default false: sources created through the admin API). */
  readonly allowPrivateAddresses?: boolean;
  /** How old the last full read may be before the next read is a full one again (default 24 h). */
  readonly fullSyncEveryMs?: number;
  /** How far before the high-water mark incremental reads start (default 60 s). */
  readonly overlapMs?: number;
}

const MAX_SKIPPED_SHOWN = 100;
const MAX_MESSAGE_LENGTH = 400;

/** A message with peer-controlled text, bounded (after the token was scrubbed from it). */
function clip(text: string): string {
  return text.length > MAX_MESSAGE_LENGTH ? `${text.slice(0, MAX_MESSAGE_LENGTH)}…` : text;
}

type Removed = { kind: SyncItem['kind']; name: string; version: string };

/** One item as received, valid or not, with what the revision needs of it. */
interface Received {
  readonly updatedAtMs: number | null;
  /** What the tail digest is made of. */
  readonly line: string;
}

interface ReadLists {
  readonly items: Map<string, PeerItem>;
  readonly received: Received[];
  readonly skipped: string[];
}

function parseBase(url: string, allowPrivate: boolean): URL {
  let base: URL;
  try {
    base = new URL(url);
  } catch {
    throw new SyncFailure(`the source's url is not a URL`);
  }
  if (base.protocol !== 'https:' && base.protocol !== 'http:') throw new SyncFailure(`the source's url must be an http(s) URL (got ${base.protocol})`);
  if (base.username !== '' || base.password !== '') throw new SyncFailure("the source's url must not carry a user name or password: give a token instead");
  if (base.search !== '' || base.hash !== '') throw new SyncFailure("the source's url must not have a query or fragment: it is the peer's base URL, such as https://registry.example.com");
  if (base.protocol === 'http:' && !allowPrivate) {
    throw new SyncFailure(`the source's url must use https (${base.origin}): plain http is allowed only for sources defined in the config file, or when sync.allowPrivateAddresses is true`);
  }
  base.pathname = base.pathname.replace(/\/+$/, '');
  return base;
}

export function createApiReader(settings: ApiReaderSettings, options: ApiReaderOptions = {}): SourceReader {
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  const syncTimeoutMs = options.syncTimeoutMs ?? 5 * 60_000;
  const maxItems = options.maxItems ?? 100_000;
  const maxTotalBytes = options.maxTotalBytes ?? 256 * 1024 * 1024;
  const maxValues = options.maxValues ?? MAX_SYNCED_JSON_VALUES;
  const fullSyncEveryMs = options.fullSyncEveryMs ?? 24 * 60 * 60_000;
  const overlapMs = options.overlapMs ?? 60_000;
  const allowPrivate = options.allowPrivateAddresses ?? false;
  const base = parseBase(settings.url, allowPrivate);
  const token = settings.token === '' ? null : settings.token;
  const peer = peerDigest(base.href);
  const http = new PeerHttp({ base, token, allowPrivateAddresses: allowPrivate, requestTimeoutMs, maxBytes: options.maxPageBytes ?? 8 * 1024 * 1024 });

  /** Peer-controlled text may echo the token: it never reaches a message. */
  const scrub = (text: string): string => (token === null ? text : text.split(token).join('[token]'));

  /** Both lists; null when the peer refuses `updated_since` (the caller reads everything instead). */
  async function readLists(updatedSince: string | null, signal: AbortSignal, deadline: number): Promise<ReadLists | null> {
    const budget: ReadBudget = { items: 0, bytes: 0, values: 0, maxItems, maxBytes: maxTotalBytes, maxValues };
    const incremental = updatedSince !== null;
    const lists: { list: ListName; raw: readonly RawItem[] }[] = [];
    for (const list of ['servers', 'skills'] as const) {
      const refusable = [...(incremental ? [400] : []), ...(list === 'skills' ? [404] : [])];
      const result = await readList(http, base, { list, updatedSince, includeDeleted: incremental }, budget, signal, deadline, refusable);
      if (result.type === 'refused') {
        if (result.status === 400) return null;
        continue; // 404 on skills: the peer serves servers only.
      }
      lists.push({ list, raw: result.items });
    }
    const items = new Map<string, PeerItem>();
    const received: Received[] = [];
    const skipped: string[] = [];
    for (const { list, raw } of lists) {
      const kind = list === 'servers' ? 'server' : 'skill';
      for (const { page, index, raw: value } of raw) {
        const where = `${list === 'skills' ? 'skills ' : ''}page ${page} item ${index}`;
        const checked = checkPeerItem(kind, value, where);
        if (!checked.ok) {
          skipped.push(clip(scrub(checked.problem)));
          // Without its position: an item added before it must not make it look changed.
          received.push({ updatedAtMs: checked.updatedAtMs, line: `${kind} invalid ${checked.updatedAtMs} ${checked.problem.slice(where.length)}` });
          continue;
        }
        const item = checked.item;
        received.push({ updatedAtMs: item.updatedAtMs, line: `${kind} ${item.name} ${item.version} ${item.status} ${item.updatedAtMs} ${item.digest}` });
        // The same version twice (the peer changed between pages): the newest one counts.
        const key = `${kind}\u001f${item.name}\u001f${item.version}`;
        const seen = items.get(key);
        if (seen === undefined || (item.updatedAtMs ?? -Infinity) >= (seen.updatedAtMs ?? -Infinity)) items.set(key, item);
      }
    }
    return { items, received, skipped };
  }

  const highWater = (received: readonly Received[]): number | null =>
    received.reduce<number | null>((max, r) => (r.updatedAtMs !== null && (max === null || r.updatedAtMs > max) ? r.updatedAtMs : max), null);
  /** The tail digest of the items seen within `overlapMs` before (and at) `mark`. */
  const tailAt = (received: readonly Received[], mark: number): string =>
    tailDigest(received.filter((r) => r.updatedAtMs !== null && r.updatedAtMs > mark - overlapMs && r.updatedAtMs <= mark).map((r) => r.line));
  const toSyncItem = (item: PeerItem): SyncItem => ({ kind: item.kind, name: item.name, version: item.version, document: item.document, digest: item.digest });

  function bounded(skipped: readonly string[]): string[] {
    if (skipped.length <= MAX_SKIPPED_SHOWN) return [...skipped];
    return [...skipped.slice(0, MAX_SKIPPED_SHOWN), `… and ${skipped.length - MAX_SKIPPED_SHOWN} more items skipped`];
  }

  async function snapshot(startedMs: number, signal: AbortSignal, deadline: number): Promise<ReadOutcome> {
    const read = (await readLists(null, signal, deadline))!;
    const items = [...read.items.values()].filter((item) => item.status !== 'deleted').map(toSyncItem);
    const digest = contentDigest(
      items
        .map((item) => `${item.kind}\u001f${item.name}\u001f${item.version}\u001f${item.digest}`)
        .sort()
        .join('\n'),
    );
    const mark = highWater(read.received);
    const revision = mark === null ? null : formatRevision({ highWaterMs: mark, fullAtMs: startedMs, tail: tailAt(read.received, mark), peer });
    return { type: 'snapshot', items, skipped: bounded(read.skipped), digest, revision };
  }

  /** What changed since `previous`; null when the peer refuses `updated_since`. */
  async function changes(previous: ApiRevision, previousText: string, signal: AbortSignal, deadline: number): Promise<ReadOutcome | null> {
    const read = await readLists(new Date(previous.highWaterMs - overlapMs).toISOString(), signal, deadline);
    if (read === null) return null;
    const fresh = read.received.some((r) => r.updatedAtMs === null || r.updatedAtMs > previous.highWaterMs);
    if (!fresh && tailAt(read.received, previous.highWaterMs) === previous.tail) return { type: 'unchanged', revision: previousText };
    const mark = Math.max(previous.highWaterMs, highWater(read.received) ?? previous.highWaterMs);
    const all = [...read.items.values()];
    const removed: Removed[] = all.filter((item) => item.status === 'deleted').map(({ kind, name, version }) => ({ kind, name, version }));
    return {
      type: 'changes',
      items: all.filter((item) => item.status !== 'deleted').map(toSyncItem),
      removed,
      skipped: bounded(read.skipped),
      revision: formatRevision({ highWaterMs: mark, fullAtMs: previous.fullAtMs, tail: tailAt(read.received, mark), peer }),
    };
  }

  return {
    async read(context: ReadContext): Promise<ReadOutcome> {
      const startedMs = Date.now();
      const deadline = startedMs + syncTimeoutMs;
      const bound = AbortSignal.timeout(syncTimeoutMs);
      const signal = AbortSignal.any([context.signal, bound]);
      try {
        const previousText = context.previous?.revision ?? null;
        const previous = parseRevision(previousText);
        const age = previous === null ? Infinity : startedMs - previous.fullAtMs;
        if (previous !== null && previous.peer === peer && age >= 0 && age < fullSyncEveryMs) {
          const outcome = await changes(previous, previousText!, signal, deadline);
          if (outcome !== null) return outcome;
        }
        return await snapshot(startedMs, signal, deadline);
      } catch (err) {
        if (signal.aborted) {
          throw new SyncFailure(bound.aborted ? `reading ${base.origin} took longer than ${syncTimeoutMs / 1000} s` : `reading ${base.origin} was stopped (the server is stopping or the sync ran out of time)`);
        }
        if (err instanceof ListFailure) throw new SyncFailure(clip(scrub(err.message)));
        throw err;
      }
    },
    close(): Promise<void> {
      return http.close();
    },
  };
}
