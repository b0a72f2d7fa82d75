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
 * Derived ids, so that a request on the hot path hashes nothing it hashed before. A plain map,
 * emptied when full: a lookup on every modern request costs a fraction of an LRU's (whose clock
 * sets a timer), and a busy gateway has far fewer principal × capabilities than this.
 */
const ids = new Map<string, string>();

/** The implicit session's id of `principal` declaring `capabilities`. */
export function implicitSessionId(principal: Principal | null, capabilities: Readonly<Record<string, unknown>>): string {
  const who = principal === null ? '' : ownerKey({ issuer: principal.issuer, subject: principal.subject });
  // The capabilities as sent (key order included): another order only makes another session.
  const key = `${who}\n${JSON.stringify(capabilities)}`;
  let id = ids.get(key);
  if (id === undefined) {
    id = PREFIX + createHash('sha256').update(key).digest('base64url');
    // Only small keys are kept: a client declaring megabytes of capabilities pays its hash each time.
    if (key.length <= MAX_CACHED_KEY) {
      if (ids.size >= MAX_CACHED_IDS) ids.clear();
      ids.set(key, id);
    }
  }
  return id;
}
