/**
 * Where aggregated sessions live between requests, so that any gateway process sharing the
 * store can serve a session another one created. What is stored is only what cannot be
 * rebuilt: the backend session ids and the negotiated versions (lists and routing tables are
 * rebuilt from the backends on demand). Secrets are never stored.
 */

/** One backend's side of an aggregated session. */
export interface BackendSessionRecord {
  /** The backend's `Mcp-Session-Id`, or null for a backend that runs without sessions. */
  readonly sessionId: string | null;
  /** Protocol version the backend negotiated (sent as MCP-Protocol-Version to it). */
  readonly protocolVersion: string;
  /** The backend's declared server capabilities (for routing: who has tools, logging, ...). */
  readonly capabilities: Readonly<Record<string, unknown>>;
}

export interface SessionRecord {
  /** Format version of the record. */
  readonly v: 1;
  /** The gateway's own session id (what the client sends as Mcp-Session-Id). */
  readonly id: string;
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
}

export interface SessionStore {
  /** Loads a session and extends its time to live (sliding expiry). Null when unknown or expired. */
  touch(id: string): Promise<SessionRecord | null>;
  /** Creates or replaces a session, with the store's time to live. */
  save(record: SessionRecord): Promise<void>;
  delete(id: string): Promise<void>;
  close(): Promise<void>;
}
