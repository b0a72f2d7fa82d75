/**
 * Where aggregated sessions live between requests, so that any gateway process sharing the
 * store can serve a session another one created. What is stored is only what cannot be
 * rebuilt: who owns the session, the backend session ids and the negotiated versions (lists
 * and routing tables are rebuilt from the backends on demand). Secrets are never stored.
 */
import { Buffer } from 'node:buffer';

/** One backend's side of an aggregated session. */
export interface BackendSessionRecord {
  /** The backend's `Mcp-Session-Id`, or null for a backend that runs without sessions. */
  readonly sessionId: string | null;
  /** Protocol version the backend negotiated (sent as MCP-Protocol-Version to it). */
  readonly protocolVersion: string;
  /** The backend's declared server capabilities (for routing: who has tools, logging, ...). */
  readonly capabilities: Readonly<Record<string, unknown>>;
}

/** Who created a session: the principal's issuer (null when the auth plugin has none) and subject. */
export interface SessionOwner {
  readonly issuer: string | null;
  readonly subject: string;
}

export interface SessionRecord {
  /** Format version of the record (2: with `owner`). */
  readonly v: 2;
  /** The gateway's own session id (what the client sends as Mcp-Session-Id). */
  readonly id: string;
  /** The principal that created the session; null for an anonymous gateway. Only it may use the session. */
  readonly owner: SessionOwner | null;
  /** ms since the epoch. */
  readonly createdAt: number;
  /** Protocol version negotiated with the client. */
  readonly protocolVersion: string;
  readonly clientInfo: unknown;
  readonly clientCapabilities: Readonly<Record<string, unknown>>;
  /** Backend name → its session; backends left out (partial failure) are absent. */
  readonly backends: Readonly<Record<string, BackendSessionRecord>>;
  /** Backends that were down at initialize (bestEffort mode). */
  readonly missing: readonly string[];
  /** The level the client asked for with `logging/setLevel`, for modern backends (absent: none). */
  readonly logLevel?: string;
  /**
   * The session the gateway holds for a modern (stateless) client's requests, never one a client
   * opened: its id is derived from who the client is and what it declared (implicit-session.ts).
   */
  readonly modern?: true;
}

export interface SessionStore {
  /**
   * Loads a session and extends its time to live (sliding expiry). Null when unknown or expired.
   * A store in this process answers at once (no promise: it is on every request's path).
   * `caller` is who asks (the owner, if the session is theirs): what the store keeps per owner
   * lives as long as the owner's sessions do.
   */
  touch(id: string, caller?: SessionOwner | null): SessionRecord | null | Promise<SessionRecord | null>;
  /**
   * Creates or replaces a session, with the store's time to live. A new session of an owner who
   * then holds more than the store's per-owner maximum of sessions, or of bytes (records as
   * JSON), ends that owner's oldest ones until both hold (never the new one): they are removed
   * and returned, so the caller can close their backend sessions. Other owners are never touched.
   */
  save(record: SessionRecord): Promise<readonly SessionRecord[]>;
  /**
   * Creates a session unless one with its id exists already, in one atomic step: an implicit
   * session (implicit-session.ts) is named by its principal and capabilities, so two replicas
   * may open one for the same client at once. The first wins (`created`, and what `save` would
   * return); the other gets the record stored, and uses it instead of its own, whose backend
   * sessions it ends. Otherwise as `save`.
   */
  create(record: SessionRecord): Promise<CreateOutcome>;
  /**
   * Replaces a session that still exists (a backend joined it); false when it is gone (deleted,
   * expired): a session is never brought back by anything but its own initialize.
   */
  update(record: SessionRecord): Promise<boolean>;
  delete(id: string): Promise<void>;
  close(): Promise<void>;
}

/** What `SessionStore.create` did: stored the record (ending an owner's oldest sessions past its maximum), or found one. */
export type CreateOutcome = { readonly created: true; readonly ended: readonly SessionRecord[] } | { readonly created: false; readonly existing: SessionRecord };

/**
 * Whether `principal` (the request's, null when anonymous) owns `record`. A session answers only
 * the principal that created it: any other caller is told it does not exist.
 */
export function ownedBy(record: SessionRecord, principal: SessionOwner | null): boolean {
  const owner = record.owner;
  if (owner === null || principal === null) return owner === principal;
  return owner.subject === principal.subject && owner.issuer === principal.issuer;
}

export { sessionTag } from '../../observe/log.ts';

/**
 * A record's size as the stores count it against its owner's budget: its bytes as JSON, which
 * is what the Redis store holds (and what the memory store holds, give or take the heap's own
 * overhead).
 */
export function recordSize(record: SessionRecord): number {
  return Buffer.byteLength(JSON.stringify(record));
}

/**
 * One string per owner, for indexes of sessions by owner (aggregated sessions and transparent
 * session ids alike). Hashed into Redis keys: its form is part of what replicas share.
 */
export function ownerKey(owner: SessionOwner): string {
  return `${owner.issuer ?? ''}\n${owner.subject}`;
}
