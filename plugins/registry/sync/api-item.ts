/**
 * One item of a peer's list (official MCP registry API v0.1):
 * `{"server": <server.json>, "_meta": {"io.modelcontextprotocol.registry/official": {status, publishedAt, updatedAt, isLatest}}}`
 * (a skill alike under `skill`). The document is checked as every upstream source's items are
 * (`checkUpstreamItem`); the registry's `_meta` is read for the status (`active`,
 * `deprecated`, `deleted`; absent: active) and `updatedAt` (the high-water mark of incremental
 * syncs). A bad item is refused with a problem in words, never thrown.
 */
import type { EntryKind } from '../store/records.ts';
import { documentName, versionProblem } from '../model/names.ts';
import { canonicalSkill } from '../model/skill-document.ts';
import { checkUpstreamItem } from './upstream-file.ts';

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
  /** `problem` is one line starting with where the item is (and its name and version when valid). */
  | { readonly ok: false; readonly problem: string; readonly updatedAtMs: number | null };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `updatedAt` in milliseconds (sub-millisecond digits dropped), or null. */
export function parseUpdatedAt(value: unknown): number | null {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(value)) return null;
  const ms = Date.parse(value.replace(/(\.\d{3})\d+/, '$1'));
  return Number.isNaN(ms) ? null : ms;
}

/** `where (name version)` when the document has a valid name and version, else `where`. */
function labelOf(kind: EntryKind, raw: unknown, where: string): string {
  const document = isObject(raw) ? raw[kind] : undefined;
  if (!isObject(document)) return where;
  const { name } = documentName(kind, document);
  const { version } = document;
  return name !== undefined && versionProblem(version) === null ? `${where} (${name} ${version as string})` : where;
}

/**
 * Checks one list item found at `where` (`page 3 item 17`). Documents to mirror get the shared
 * per-item check of upstream sources (`checkUpstreamItem`: name, version, the official server.json
 * schema); a deleted version only needs a valid name and version, since nothing of it is stored.
 */
export function checkPeerItem(kind: EntryKind, raw: unknown, where: string): PeerItemCheck {
  const refuse = (problem: string, updatedAtMs: number | null = null): PeerItemCheck => ({ ok: false, problem: `${labelOf(kind, raw, where)}: ${problem}`, updatedAtMs });
  if (!isObject(raw)) return { ok: false, problem: `${where}: must be an object {"${kind}": {...}, "_meta": {...}}`, updatedAtMs: null };
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
  if (status === 'deleted') {
    const { name, problem } = documentName(kind, document);
    const versionWrong = versionProblem(document.version);
    if (problem !== null || versionWrong !== null) return refuse(problem ?? versionWrong!, updatedAtMs);
    const stored = kind === 'skill' ? canonicalSkill(document, name) : document;
    return { ok: true, item: { kind, name, version: document.version as string, document: stored, digest: '', status, updatedAtMs } };
  }
  const checked = checkUpstreamItem(kind, document, where);
  if ('problem' in checked) return { ok: false, problem: checked.problem, updatedAtMs };
  // The document as stored (a skill in its one shape: model/skill-document.ts).
  return { ok: true, item: { ...checked.item, status, updatedAtMs } };
}
