/**
 * The revision an API source records after a good sync, and reads back before the next one:
 *
 *   2026-03-01T10:00:00.123Z;full=2026-03-01T09:00:00.000Z;tail=<digest>;peer=<digest>
 *
 * - the high-water mark: the greatest `updatedAt` the peer has shown (the peer's clock);
 * - `full`: when the last full snapshot was read (this registry's clock): a full read is made
 *   again once it is older than the full-sync period;
 * - `tail`: a digest of the items whose `updatedAt` lies in the overlap window just before the
 *   high-water mark. The next read asks from the mark minus the overlap (a change committed late
 *   with an earlier time is not missed), so it sees those items again: when they are exactly the
 *   same and nothing is newer, nothing changed;
 * - `peer`: a digest of the peer's URL: a revision of another peer (the URL was changed) is not
 *   continued from.
 *
 * Anything else (another kind's revision, a damaged one) reads as null: a full snapshot follows.
 */
import { createHash } from 'node:crypto';

export interface ApiRevision {
  readonly highWaterMs: number;
  readonly fullAtMs: number;
  readonly tail: string;
  readonly peer: string;
}

const FORMAT = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z);full=(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z);tail=([A-Za-z0-9_-]{1,64});peer=([A-Za-z0-9_-]{1,64})$/;

export function formatRevision(revision: ApiRevision): string {
  return `${new Date(revision.highWaterMs).toISOString()};full=${new Date(revision.fullAtMs).toISOString()};tail=${revision.tail};peer=${revision.peer}`;
}

export function parseRevision(text: string | null | undefined): ApiRevision | null {
  if (typeof text !== 'string') return null;
  const match = FORMAT.exec(text);
  if (match === null) return null;
  const highWaterMs = Date.parse(match[1]!);
  const fullAtMs = Date.parse(match[2]!);
  if (Number.isNaN(highWaterMs) || Number.isNaN(fullAtMs)) return null;
  return { highWaterMs, fullAtMs, tail: match[3]!, peer: match[4]! };
}

const digest = (text: string): string => createHash('sha256').update(text).digest('base64url').slice(0, 22);

/** Which peer a revision belongs to. */
export function peerDigest(url: string): string {
  return digest(url);
}

/** The digest of the items seen in the tail window (order-independent): each is `kind` + its raw JSON. */
export function tailDigest(lines: readonly string[]): string {
  return digest([...lines].sort().join('\n'));
}
