/**
 * One item of a peer's list (official MCP registry API v0.1):
 * `{"server": <server.json>, "_meta": {"io.modelcontextprotocol.registry/official": {status, publishedAt, updatedAt, isLatest}}}`
 * (a skill alike under `skill`). The document is checked with the rules of the upstream file
 * format (`checkItemDocument`); the registry's `_meta` is read for the status (`active`,
 * `deprecated`, `deleted`; absent: active) and `updatedAt` (the high-water mark of incremental
 * syncs). A bad item is refused with a problem in words, never thrown.
 */
import { documentDigest } from '../store/entries-store.ts';
import type { EntryKind } from '../store/records.ts';
import { jsonValueProblem } from '../model/json-value.ts';
import { entryNameProblem, versionProblem } from '../model/names.ts';

export const OFFICIAL_META = 'io.modelcontextprotocol.registry/official';

export type PeerStatus = 'active' | 'deprecated' | 'deleted';

export interface PeerItem {
  readonly kind: EntryKind;
  readonly name: string;
  readonly version: string;
  readonly document: Readonly<Record<string, unknown>>;
  readonly digest: string;
  readonly status: PeerStatus;
  /** `updatedAt` in milliseconds, null when the peer gave none (or none readable). */
  readonly updatedAtMs: number | null;
}

export type PeerItemCheck =
  | { readonly ok: true; readonly item: PeerItem }
  /** `label` names the item (`name version`) when it has a readable name and version. */
  | { readonly ok: false; readonly problem: string; readonly label: string | null; readonly updatedAtMs: number | null };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The item's name and version, or what is wrong with its document. The one place the API source
 * judges a document: it follows the upstream file's rules, and is where the shared per-item check
 * of upstream-file.ts goes once it exists.
 */
export function checkItemDocument(kind: EntryKind, document: Record<string, unknown>): { name: string; version: string } | { problem: string } {
  const name = kind === 'skill' && typeof document.namespace === 'string' && typeof document.name === 'string' ? `${document.namespace}/${document.name}` : document.name;
  const problem = entryNameProblem(name) ?? versionProblem(document.version) ?? jsonValueProblem(document)?.replace(/^\$/, `the ${kind}`) ?? null;
  return problem === null ? { name: name as string, version: document.version as string } : { problem };
}

/** `updatedAt` in milliseconds (sub-millisecond digits dropped), or null. */
export function parseUpdatedAt(value: unknown): number | null {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(value)) return null;
  const ms = Date.parse(value.replace(/(\.\d{3})\d+/, '$1'));
  return Number.isNaN(ms) ? null : ms;
}

function labelOf(kind: EntryKind, raw: unknown): string | null {
  const document = isObject(raw) ? raw[kind] : undefined;
  if (!isObject(document)) return null;
  const { name, version } = document;
  // Unbounded here: the message is cut to length once the token is scrubbed from it (api-source.ts).
  return typeof name === 'string' && typeof version === 'string' ? `${name} ${version}` : typeof name === 'string' ? name : null;
}

export function checkPeerItem(kind: EntryKind, raw: unknown): PeerItemCheck {
  const refuse = (problem: string, updatedAtMs: number | null = null): PeerItemCheck => ({ ok: false, problem, label: labelOf(kind, raw), updatedAtMs });
  if (!isObject(raw)) return refuse(`must be an object {"${kind}": {...}, "_meta": {...}}`);
  const meta = raw._meta;
  if (meta !== undefined && meta !== null && !isObject(meta)) return refuse('_meta must be an object');
  const official = isObject(meta) ? meta[OFFICIAL_META] : undefined;
  if (official !== undefined && official !== null && !isObject(official)) return refuse(`_meta["${OFFICIAL_META}"] must be an object`);
  const status = isObject(official) ? (official.status ?? 'active') : 'active';
  const updatedAtMs = isObject(official) ? parseUpdatedAt(official.updatedAt) : null;
  if (status !== 'active' && status !== 'deprecated' && status !== 'deleted') {
    const got = typeof status === 'string' ? JSON.stringify(status.slice(0, 100)) : Array.isArray(status) ? 'a list' : status === null ? 'null' : `a ${typeof status}`;
    return refuse(`its status must be active, deprecated or deleted (got ${got})`, updatedAtMs);
  }
  if (isObject(official) && official.updatedAt !== undefined && updatedAtMs === null) return refuse('its updatedAt is not an RFC 3339 time');
  const document = raw[kind];
  if (!isObject(document)) return refuse(`"${kind}" must be an object (the ${kind === 'server' ? 'server.json' : 'skill'} document)`, updatedAtMs);
  const checked = checkItemDocument(kind, document);
  if ('problem' in checked) return refuse(checked.problem, updatedAtMs);
  return { ok: true, item: { kind, name: checked.name, version: checked.version, document, digest: documentDigest(document), status, updatedAtMs } };
}
