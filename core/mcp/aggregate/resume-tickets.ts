/**
 * Which response a resumed request stream may carry, whichever replica it is resumed through.
 *
 * A routed SSE answer can break off before its response: the backend closes it, the client
 * leaves, or the replica routing it dies. The client resumes it with GET + Last-Event-ID,
 * through any replica, and the backend replays it. A backend speaks only for itself (test/security/README.md,
 * "A backend speaks only for itself"): the resumed stream may carry the response to the request
 * whose stream it is, once, and no other response.
 *
 * Which request that is travels in the event ids the client got, as a ticket. The ticket is sealed
 * with HMAC-SHA256 under a key derived from the one the replicas share (relay.ts), over the
 * session, the backend's name and the request id. So every replica can read it, and no replica has
 * to write anything when an answer starts. A replica SIGKILLed mid-answer has recorded nothing,
 * and a streamed answer costs no Redis round trip. A ticket the gateway did not issue lets no
 * response through: one from another session or another backend, an edited one, or an expired one.
 *
 * The response passes once. The first resumed stream that delivers it claims the ticket among the
 * replicas (`Relay.claim`: Redis SET NX, or this process). A later resumption of the same stream,
 * through any replica, drops the response. A response that reached the client on its own stream
 * is noted in this process only (no shared write on that path). A resumption through this replica
 * drops it too. Through another replica, a client that resumes a stream whose response it already
 * got would get it once more. No honest client does that, and it is still that backend's answer
 * to that request.
 *
 * In an event id (ids.ts): `<backend index>~<payload>~<mac>.<backend's event id>`, where the
 * payload is the base64url of the JSON `[nonce, request id, expiry in s]`. The nonce is unique
 * per routed answer, and it is what gets claimed: a client that reuses a request id does not
 * collide with the earlier request's claim.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Buffer } from 'node:buffer';
import type { JsonRpcId } from '../../protocol/jsonrpc.ts';
import type { Relay } from './relay.ts';

/** How long after its answer started a ticket lets the response through, and how long its claim is kept. */
export const TICKET_MS = 24 * 60 * 60_000;
/** Longest payload (the request id as JSON, mostly): a longer id's stream resumes without its response. */
const MAX_PAYLOAD_BYTES = 384;
/** Bytes of the MAC kept (128 bits; 22 base64url characters). */
const MAC_BYTES = 16;
/** Responses this process delivered on their own streams and remembers; past it, the oldest are forgotten. */
const MAX_DELIVERED = 4096;

export interface Ticket {
  /** As it goes into event ids: `<payload>~<mac>`. */
  readonly token: string;
  /** The request whose response it lets through. */
  readonly requestId: string | number;
  /** Unique per routed answer: what is claimed. */
  readonly nonce: string;
  /** When it stops letting the response through, ms since the epoch. */
  readonly expires: number;
}

export class ResumeTickets {
  readonly #key: Buffer;
  readonly #relay: Pick<Relay, 'claim'>;
  /** Nonces are this prefix (random for each endpoint, so no two processes or generations share one) and a count. */
  readonly #prefix = randomBytes(9).toString('base64url');
  #count = 0;
  /** Nonces whose response reached the client on its own stream (or on a resumed one through here), oldest first. */
  readonly #delivered = new Set<string>();

  /** `relay`: its key (the replicas' shared one) seals, its `claim` makes a delivery once-only. */
  constructor(relay: Pick<Relay, 'key' | 'claim'>) {
    // A key of its own: a ticket can never pass for another sealed thing (a requestState), nor the reverse.
    this.#key = createHmac('sha256', relay.key).update('gatehouse resume-ticket v1').digest();
    this.#relay = relay;
  }

  /** A ticket for the response to `requestId`, routed to backend `backend` in session `session`; null when none can be issued. */
  issue(session: string, backend: string, requestId: JsonRpcId): Ticket | null {
    if (requestId === null) return null;
    const nonce = this.#prefix + (++this.#count).toString(36);
    const expiry = Math.ceil((Date.now() + TICKET_MS) / 1000);
    const json = Buffer.from(JSON.stringify([nonce, requestId, expiry]));
    if (json.length > MAX_PAYLOAD_BYTES) return null;
    const payload = json.toString('base64url');
    return { token: `${payload}~${this.#mac(session, backend, payload).toString('base64url')}`, requestId, nonce, expires: expiry * 1000 };
  }

  /** The ticket `token` is, if this gateway issued it for `session` and `backend` and it has not expired; else null. */
  open(session: string, backend: string, token: string): Ticket | null {
    const tilde = token.indexOf('~');
    if (tilde <= 0 || tilde > 2 * MAX_PAYLOAD_BYTES) return null;
    const payload = token.slice(0, tilde);
    const given = Buffer.from(token.slice(tilde + 1), 'base64url');
    const expected = this.#mac(session, backend, payload);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    let claims: unknown;
    try {
      claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return null;
    }
    if (!Array.isArray(claims) || claims.length !== 3) return null;
    const [nonce, requestId, expiry] = claims as unknown[];
    if (typeof nonce !== 'string' || (typeof requestId !== 'string' && typeof requestId !== 'number') || typeof expiry !== 'number') return null;
    if (expiry * 1000 <= Date.now()) return null;
    return { token, requestId, nonce, expires: expiry * 1000 };
  }

  /** The response of `ticket` reached the client on its own stream: a resumption through here does not deliver it again. */
  delivered(ticket: Ticket): void {
    const delivered = this.#delivered;
    delivered.add(ticket.nonce);
    if (delivered.size > MAX_DELIVERED) delivered.delete(delivered.values().next().value!);
  }

  /**
   * Whether a resumed stream may deliver the response of `ticket` now: true once, among every
   * replica (at once when this process knows, or with the memory store; else after Redis says).
   */
  claim(ticket: Ticket): boolean | Promise<boolean> {
    if (this.#delivered.has(ticket.nonce)) return false;
    const ttl = ticket.expires - Date.now();
    if (ttl <= 0) return false;
    const claimed = this.#relay.claim(`resume:${ticket.nonce}`, ttl);
    if (typeof claimed === 'boolean') return this.#won(ticket, claimed);
    return claimed.then((won) => this.#won(ticket, won));
  }

  #won(ticket: Ticket, won: boolean): boolean {
    if (won) this.delivered(ticket);
    return won;
  }

  #mac(session: string, backend: string, payload: string): Buffer {
    return createHmac('sha256', this.#key).update(JSON.stringify([session, backend, payload])).digest().subarray(0, MAC_BYTES);
  }
}
