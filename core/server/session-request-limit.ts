/**
 * `server.maxSessionRequests`: how many requests one MCP session may have in flight at once (its
 * GET stream and listens included). Without it, one client could hold every backend connection and
 * the gateway's memory with calls that never end. Counted after the request is authenticated, per
 * `Mcp-Session-Id` and principal (Principal.key; '' when anonymous), so another principal that
 * learned the id cannot fill the session's count; the count goes down when the response is done
 * (finished, or the client went away). Stateless (2026-07-28) requests carry no session:
 * `maxPipelinedRequests` and `maxConnections` bound them.
 *
 * Kept by session, then by principal, not under one joined key: a key joined per request was a new
 * string to flatten and hash on every authenticated request (the issuer, the subject and the id,
 * ~1,000 instructions under callgrind). The session id is hashed as any header value is, and a
 * session's own principal, nearly always the only one, is compared, not hashed.
 */

/** One session's requests in flight: the first principal's, and any other's that names the session. */
interface InFlight {
  readonly who: string;
  count: number;
  others: Map<string, number> | null;
}

export class SessionRequestLimit {
  readonly max: number;
  readonly #bySession = new Map<string, InFlight>();
  /** (session, principal) pairs with a request in flight. */
  #pairs = 0;

  constructor(max: number) {
    this.max = max;
  }

  /** Counts one more request of `session` by `who`; false (nothing counted) when they have `max` in flight. */
  enter(session: string, who: string): boolean {
    const entry = this.#bySession.get(session);
    if (entry === undefined) {
      this.#bySession.set(session, { who, count: 1, others: null });
      this.#pairs++;
      return true;
    }
    if (entry.who === who) {
      if (entry.count >= this.max) return false;
      if (entry.count++ === 0) this.#pairs++;
      return true;
    }
    const others = (entry.others ??= new Map());
    const count = others.get(who) ?? 0;
    if (count >= this.max) return false;
    others.set(who, count + 1);
    if (count === 0) this.#pairs++;
    return true;
  }

  leave(session: string, who: string): void {
    const entry = this.#bySession.get(session);
    if (entry === undefined) return;
    if (entry.who === who) {
      if (entry.count === 0) return;
      if (--entry.count === 0) this.#pairs--;
    } else {
      const count = entry.others?.get(who);
      if (count === undefined) return;
      if (count > 1) entry.others!.set(who, count - 1);
      else {
        entry.others!.delete(who);
        this.#pairs--;
      }
    }
    if (entry.count === 0 && (entry.others === null || entry.others.size === 0)) this.#bySession.delete(session);
  }

  /** Sessions with a request in flight, one per principal that sent it (for tests and the status document). */
  get sessions(): number {
    return this.#pairs;
  }
}
