/**
 * `server.maxSessionRequests`: how many requests one MCP session may have in flight at once (its
 * GET stream and listens included). Without it, one client could hold every backend connection and
 * the gateway's memory with calls that never end. Counted after the request is authenticated, per
 * principal and `Mcp-Session-Id` (the key live-routes.ts gives), so another principal that
 * learned the id cannot fill the session's count; the count goes down when the response is done
 * (finished, or the client went away). Stateless (2026-07-28)
 * requests carry no session: `maxPipelinedRequests` and `maxConnections` bound them.
 */
export class SessionRequestLimit {
  readonly max: number;
  readonly #counts = new Map<string, number>();

  constructor(max: number) {
    this.max = max;
  }

  /** Counts one more request of `session`; false (nothing counted) when it has `max` in flight. */
  enter(session: string): boolean {
    const count = this.#counts.get(session) ?? 0;
    if (count >= this.max) return false;
    this.#counts.set(session, count + 1);
    return true;
  }

  leave(session: string): void {
    const count = this.#counts.get(session);
    if (count === undefined) return;
    if (count <= 1) this.#counts.delete(session);
    else this.#counts.set(session, count - 1);
  }

  /** Sessions with a request in flight (for tests and the status document). */
  get sessions(): number {
    return this.#counts.size;
  }
}
