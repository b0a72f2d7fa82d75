/**
 * Paged listings: the consumer listing of a registry (one row per version, in name and version
 * order), and the raw entries of a source or registry (one item per entry, with its versions).
 * Tombstones (deleted versions) are left out unless a consumer listing asks for them; an entry
 * whose versions are all deleted is not among the raw entries.
 *
 * Pages are keyset-paginated (the cursor is the sort key of the last item served) and the claims
 * filter runs in the query, so a page costs the same whether it is the first or the hundredth,
 * and however many entries the caller may not see.
 */
import { Params, decodeCursor, encodeCursor } from './cursor.ts';
import type { Database } from './database.ts';
import { LIVE, NOT_OUTRANKED, SERVED_COLUMNS, servedByRegistry, toServedVersion, visibleTo, type ServedRow } from './entry-sql.ts';
import type { EntryFilter, EntryKind, EntryRecord, Page, ServedVersion } from './records.ts';
import { canonicalDocument } from '../model/skill-document.ts';

export interface VersionListQuery {
  readonly registry: string;
  readonly kind: EntryKind;
  readonly filter: EntryFilter;
  readonly cursor: string | null;
  readonly limit: number;
  /** Case-insensitive substring of the name. */
  readonly search: string | null;
  /** Only versions updated after this instant. */
  readonly updatedSince: Date | null;
  /** `latest`, an exact version, or null for every version. */
  readonly version: string | null;
  /** Tombstones (deleted versions) too (default: no). */
  readonly includeDeleted?: boolean;
}

export interface EntryListQuery {
  readonly filter: EntryFilter;
  readonly cursor: string | null;
  readonly limit: number;
}

export class EntryListing {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async versions(query: VersionListQuery): Promise<Page<ServedVersion>> {
    const p = new Params();
    let sql = `SELECT ${SERVED_COLUMNS} ${servedByRegistry(p, query.registry, query.kind)}${visibleTo(p, query.filter)}`;
    if (query.cursor !== null) {
      const [name, version] = decodeCursor(query.cursor, 2);
      const after = p.add(name);
      // `e.name >= …` lets the (kind, name) index start at the cursor instead of the first name.
      sql += ` AND e.name >= ${after} AND (e.name, v.version) > (${after}, ${p.add(version)})`;
    }
    if (query.search !== null) sql += ` AND strpos(lower(e.name), lower(${p.add(query.search)})) > 0`;
    if (query.updatedSince !== null) sql += ` AND v.updated_at > ${p.add(query.updatedSince.toISOString())}::timestamptz`;
    if (query.includeDeleted !== true) sql += ` AND ${LIVE}`;
    if (query.version === 'latest') sql += ' AND v.is_latest';
    else if (query.version !== null) sql += ` AND v.version = ${p.add(query.version)}`;
    sql += ` ORDER BY e.name, v.version LIMIT ${p.add(query.limit + 1)}`;
    const rows = await this.#db.query<ServedRow>(sql, p.values);
    const items = rows.slice(0, query.limit).map(toServedVersion);
    const last = items.at(-1);
    return { items, nextCursor: rows.length > query.limit && last !== undefined ? encodeCursor([last.name, last.version]) : null };
  }

  /** The raw entries of one source. */
  sourceEntries(source: string, query: EntryListQuery): Promise<Page<EntryRecord>> {
    const p = new Params();
    const from = `FROM entries e WHERE e.source = ${p.add(source)}`;
    return this.#entries(p, from, query);
  }

  /** The raw entries a registry serves (servers and skills). */
  registryEntries(registry: string, query: EntryListQuery): Promise<Page<EntryRecord>> {
    const p = new Params();
    const r = p.add(registry);
    const from = `FROM registry_sources rs JOIN sources rsrc ON rsrc.name = rs.source JOIN entries e ON e.source = rs.source
      WHERE rs.registry = ${r}
        AND ${NOT_OUTRANKED}`;
    return this.#entries(p, from, query);
  }

  async #entries(p: Params, from: string, query: EntryListQuery): Promise<Page<EntryRecord>> {
    let sql = `SELECT e.id, e.source, e.kind, e.name, e.claims ${from}${visibleTo(p, query.filter)}
      AND EXISTS (SELECT 1 FROM entry_versions v WHERE v.entry_id = e.id AND ${LIVE})`;
    if (query.cursor !== null) {
      const [kind, name] = decodeCursor(query.cursor, 2);
      const afterKind = p.add(kind);
      sql += ` AND e.kind >= ${afterKind} AND (e.kind, e.name) > (${afterKind}, ${p.add(name)})`;
    }
    sql += ` ORDER BY e.kind, e.name LIMIT ${p.add(query.limit + 1)}`;
    const rows = await this.#db.query<{ id: number; source: string; kind: EntryKind; name: string; claims: Record<string, string> }>(sql, p.values);
    const page = rows.slice(0, query.limit);
    const versions = await this.#db.query<{ entry_id: number; version: string; document: Record<string, unknown>; is_latest: boolean; published_at: Date; updated_at: Date }>(
      `SELECT entry_id, version, document, is_latest, published_at, updated_at FROM entry_versions
       WHERE entry_id = ANY($1::int[]) AND deleted_at IS NULL ORDER BY entry_id, version_key DESC, published_at DESC, version DESC`,
      [page.map((row) => row.id)],
    );
    const entryOf = new Map(page.map((row) => [row.id, row]));
    const byEntry = new Map<number, EntryRecord['versions'][number][]>();
    for (const v of versions) {
      let list = byEntry.get(v.entry_id);
      if (list === undefined) byEntry.set(v.entry_id, (list = []));
      const entry = entryOf.get(v.entry_id)!;
      // A skill row written before skills had one shape reads in it (model/skill-document.ts).
      list.push({ version: v.version, document: canonicalDocument(entry.kind, entry.name, v.document), isLatest: v.is_latest, publishedAt: v.published_at, updatedAt: v.updated_at, deletedAt: null });
    }
    const items = page.map((row) => ({ source: row.source, kind: row.kind, name: row.name, claims: row.claims, versions: byEntry.get(row.id) ?? [] }));
    const last = items.at(-1);
    return { items, nextCursor: rows.length > query.limit && last !== undefined ? encodeCursor([last.kind, last.name]) : null };
  }
}
