/**
 * What the stores return: sources, registries and entry versions as records.
 */
import type { ClaimMap } from '../../registry-authz/claims.ts';
import type { RegistryDefinition, SourceDefinition } from '../config/registry-config.ts';

/** Where a source or registry was defined: the config file (read-only through the API) or the admin API. */
export type Origin = 'config' | 'api';

export type EntryKind = 'server' | 'skill';

/** Outcome of the syncs of a synced source, shown by `GET /v1/sources/{name}` (shared by every replica). */
export interface SyncStatus {
  /**
   * `pending`: never synced; `syncing`: a sync is under way; `ok`: the last sync succeeded;
   * `failed`: it did not (the last good data stays visible).
   */
  readonly phase: 'pending' | 'syncing' | 'ok' | 'failed';
  readonly lastAttemptAt: string | null;
  readonly lastSuccessAt: string | null;
  /** When the next attempt is due (after a failure: the back-off). */
  readonly nextAttemptAt: string | null;
  /** Attempts since the last success (0 after a success). */
  readonly failedAttempts: number;
  /** Attempts ever made. */
  readonly attempts: number;
  /** Why the last sync failed (null when it succeeded). */
  readonly message: string | null;
  /** Entries of the last good data. */
  readonly servers: number;
  readonly skills: number;
  /** Items of the last good data that were refused (invalid), named by where they are and why. */
  readonly skipped: readonly string[];
  /** sha256 of the content last applied: unchanged content is not written again. */
  readonly digest: string | null;
  /** The source's own version of that content: a git commit, an API peer's high-water mark. */
  readonly revision: string | null;
}

export interface SourceRecord extends SourceDefinition {
  readonly origin: Origin;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  readonly sync: SyncStatus | null;
}

export interface RegistryRecord extends RegistryDefinition {
  readonly origin: Origin;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  /** The one managed source among `sources` (where publishing writes), or null. */
  readonly managedSource: string | null;
}

/** One version of one entry, as a consumer sees it. */
export interface ServedVersion {
  readonly kind: EntryKind;
  readonly name: string;
  readonly version: string;
  readonly document: Readonly<Record<string, unknown>>;
  readonly isLatest: boolean;
  readonly publishedAt: Date;
  readonly updatedAt: Date;
  /** When the version was deleted (it is a tombstone, `status: "deleted"`), or null. */
  readonly deletedAt: Date | null;
}

/** One version of one entry, with where it lives and its claims. */
export interface VersionRecord extends ServedVersion {
  readonly source: string;
  readonly claims: ClaimMap;
}

/** An entry with all its versions (the raw entries of the admin API). */
export interface EntryRecord {
  readonly source: string;
  readonly kind: EntryKind;
  readonly name: string;
  readonly claims: ClaimMap;
  readonly versions: readonly Omit<VersionRecord, 'source' | 'kind' | 'name' | 'claims'>[];
}

/**
 * Which entries a caller may see: null when no claim check applies (anonymous, auth-only,
 * superAdmin), else the claim pairs the caller holds (an entry is visible when it has claims
 * and all of them are among these).
 */
export type EntryFilter = { readonly pairs: readonly string[] } | null;

/** A page of results and the cursor of the next page (null on the last page). */
export interface Page<T> {
  readonly items: readonly T[];
  readonly nextCursor: string | null;
}
