/**
 * What every synced source kind provides: a reader that fetches the source's current content.
 * The scheduler (scheduler.ts) owns everything around a read: when it runs, one process at a
 * time across replicas, the status, back-off, metrics and logs; the writer
 * (store/source-sync-writer.ts) applies what a read returns in one transaction.
 *
 * A reader throws `SyncFailure` with a message an operator can act on (it is shown in
 * `GET /v1/sources/{name}` and logged); anything else it throws is reported as an unexpected
 * failure. Either way the source keeps its last good data.
 */
import type { SyncItem } from '../store/source-sync-writer.ts';
import type { SyncStatus } from '../store/records.ts';

export interface ReadContext {
  /** Aborted when the server stops or the read exceeds its time bound. */
  readonly signal: AbortSignal;
  /** The status of the last sync (shared by every replica): its `digest` and `revision`. */
  readonly previous: SyncStatus | null;
}

/** Items of the source that were refused, each named by where it is and why (shown in the status). */
export type Skipped = readonly string[];

export type ReadOutcome =
  /** The whole content: the source's entries become exactly `items`. */
  | { readonly type: 'snapshot'; readonly items: readonly SyncItem[]; readonly skipped: Skipped; readonly digest: string; readonly revision?: string | null }
  /** Changes since `previous.revision`: `items` are added or replaced, `removed` become tombstones. */
  | {
      readonly type: 'changes';
      readonly items: readonly SyncItem[];
      readonly removed: readonly { readonly kind: SyncItem['kind']; readonly name: string; readonly version: string }[];
      readonly skipped: Skipped;
      readonly revision: string;
    }
  /** Same content as the last good sync (same digest or revision): nothing is written. */
  | { readonly type: 'unchanged'; readonly revision?: string | null };

export interface SourceReader {
  read(context: ReadContext): Promise<ReadOutcome>;
  /** Frees what the reader holds (watches, temporary directories). */
  close?(): Promise<void> | void;
}

/** A failure of a read, in words for the operator. */
export class SyncFailure extends Error {
  override readonly name = 'SyncFailure';
}
