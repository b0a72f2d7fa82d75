/**
 * The session the gateway holds on behalf of a modern (stateless) client. A modern client has no
 * session, but a legacy backend serves only within one: the gateway opens the backend sessions
 * for it and keeps them, with the lists it fetched, in an aggregated session of its own whose id
 * is derived from who the client is (issuer and subject) and what it declared (its capabilities:
 * a backend must not ask for input the client did not declare). So two principals never share
 * one, each principal's requests with the same capabilities find theirs again on any replica
 * sharing the store, and no id travels to the client.
 *
 * Anonymous gateways have one principal, nobody: their modern clients share these sessions per
 * set of capabilities (anonymous mode is for development only).
 */
import { createHash } from 'node:crypto';
import type { Principal } from '../../plugin-api/context.ts';
import { ownerKey } from './session-store.ts';

const PREFIX = 'm.';

const MAX_CACHED_KEY = 4096;

const MAX_CACHED_IDS = 10_000;

/**
 * Derived ids, so that a request on the hot path hashes nothing it hashed before: by the
 * capabilities' JSON (a request read by its envelope's known tail brings the same string each
 * time, whose hash V8 keeps), then by principal. Plain maps, emptied when full: a lookup on
 * every modern request costs a fraction of an LRU's (whose clock sets a timer), and a busy
 * gateway has far fewer principal × capabilities than this.
 */
const ids = new Map<string, Map<string, string>>();
let cachedIds = 0;

/**
 * The implicit session's id of `principal` declaring `capabilities`; `capabilitiesJson`, when
 * known, is JSON.stringify's text of them (envelope-tails.ts), which is not written again.
 */
export function implicitSessionId(principal: Principal | null, capabilities: Readonly<Record<string, unknown>>, capabilitiesJson: string | null = null): string {
  const who = principal === null ? '' : ownerKey({ issuer: principal.issuer, subject: principal.subject });
  // The capabilities as sent (key order included): another order only makes another session.
  const declared = capabilitiesJson ?? JSON.stringify(capabilities);
  let byPrincipal = ids.get(declared);
  let id = byPrincipal?.get(who);
  if (id === undefined) {
    const key = `${who}\n${declared}`;
    id = PREFIX + createHash('sha256').update(key).digest('base64url');
    // Only small keys are kept: a client declaring megabytes of capabilities pays its hash each time.
    if (key.length <= MAX_CACHED_KEY) {
      if (cachedIds >= MAX_CACHED_IDS) {
        ids.clear();
        cachedIds = 0;
        byPrincipal = undefined;
      }
      if (byPrincipal === undefined) ids.set(declared, (byPrincipal = new Map()));
      byPrincipal.set(who, id);
      cachedIds++;
    }
  }
  return id;
}
