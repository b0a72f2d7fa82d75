/**
 * The identifiers an aggregated session rewrites, encoded so that any gateway process can route
 * them back without shared state:
 *
 *  - Server→client request ids (sampling, elicitation, roots): `g<backend index>~<n|s><id>`.
 *    The client answers with the same id; the answer goes to the backend that asked, with its
 *    own id. Ids from different backends can never collide: the backend is part of the id.
 *  - Requests for input the gateway asks a legacy client on a modern backend's behalf (its
 *    `input_required` answer, input-relay.ts): `g<backend index>~i<wait id>:<position>`.
 *  - SSE event ids of a request's stream: `<backend index>~<ticket>.<backend's event id>`, or
 *    `<backend index>.<backend's event id>` without a ticket; a client that resumes with one as
 *    Last-Event-ID is sent to that backend with the backend's own id. The ticket, sealed, names
 *    the request whose response the resumed stream may carry (resume-tickets.ts).
 *  - SSE event ids of the multiplexed GET stream: `m.<base64url of [[index, id], ...]>`, the last
 *    event id seen from each backend, so that resuming resumes every backend where it was.
 * Backend indexes are positions in the group, the same in every process of one config.
 *
 * A backend's event id goes back to that backend as a `Last-Event-ID` header, so only ids that
 * are safe in a header are kept as positions (printable ASCII, at most 256 characters): the
 * gateway never issues an id carrying another, and refuses one it could not have issued.
 */
import { Buffer } from 'node:buffer';
import type { JsonRpcId } from '../../protocol/jsonrpc.ts';

const RESUMABLE = /^[\x20-\x7e]{1,256}$/;

/** Whether a backend's SSE event id can be handed back to it as `Last-Event-ID`. */
export function isResumableEventId(id: string | null): id is string {
  return id !== null && RESUMABLE.test(id);
}

const REQUEST = /^g(\d+)~([ns])([\s\S]*)$/;

export function wrapRequestId(backendIndex: number, id: string | number): string {
  return typeof id === 'number' ? `g${backendIndex}~n${id}` : `g${backendIndex}~s${id}`;
}

export function unwrapRequestId(id: JsonRpcId): { backendIndex: number; id: string | number } | null {
  if (typeof id !== 'string') return null;
  const match = REQUEST.exec(id);
  if (match === null) return null;
  const original = match[2] === 'n' ? Number(match[3]) : match[3]!;
  if (typeof original === 'number' && !Number.isFinite(original)) return null;
  return { backendIndex: Number(match[1]), id: original };
}

const INPUT_REQUEST = /^g(\d+)~i([A-Za-z0-9_-]{1,64}):(\d{1,4})$/;

export function wrapInputRequestId(backendIndex: number, waitId: string, position: number): string {
  return `g${backendIndex}~i${waitId}:${position}`;
}

/** A request for input the gateway asked: which wait, which of its requests; null for any other id. */
export function unwrapInputRequestId(id: JsonRpcId): { backendIndex: number; waitId: string; position: number } | null {
  if (typeof id !== 'string') return null;
  const match = INPUT_REQUEST.exec(id);
  return match === null ? null : { backendIndex: Number(match[1]), waitId: match[2]!, position: Number(match[3]) };
}

export function routedEventId(backendIndex: number, eventId: string, ticket: string | null = null): string {
  return ticket === null ? `${backendIndex}.${eventId}` : `${backendIndex}~${ticket}.${eventId}`;
}

export function multiplexEventId(positions: ReadonlyMap<number, string>): string {
  return 'm.' + Buffer.from(JSON.stringify([...positions])).toString('base64url');
}

export type ParsedEventId =
  | { readonly kind: 'routed'; readonly backendIndex: number; readonly eventId: string; readonly ticket: string | null }
  | { readonly kind: 'multiplex'; readonly positions: ReadonlyMap<number, string> };

/** A routed event id with a ticket (base64url payload ~ 22-character MAC): whether it is genuine is resume-tickets.ts's question. */
const TICKETED = /^(\d{1,6})~([A-Za-z0-9_-]{1,1024}~[A-Za-z0-9_-]{22})\.([\s\S]*)$/;

/** Decodes a Last-Event-ID this gateway could have issued; null for anything else. */
export function parseEventId(value: string): ParsedEventId | null {
  if (value.startsWith('m.')) {
    try {
      const pairs = JSON.parse(Buffer.from(value.slice(2), 'base64url').toString('utf8')) as unknown;
      if (!Array.isArray(pairs)) return null;
      const positions = new Map<number, string>();
      for (const pair of pairs) {
        if (!Array.isArray(pair) || pair.length !== 2 || !Number.isInteger(pair[0]) || (pair[0] as number) < 0 || !isResumableEventId(pair[1] as string | null)) return null;
        positions.set(pair[0] as number, pair[1] as string);
      }
      return { kind: 'multiplex', positions };
    } catch {
      return null;
    }
  }
  const ticketed = TICKETED.exec(value);
  if (ticketed !== null) {
    const eventId = ticketed[3]!;
    return isResumableEventId(eventId) ? { kind: 'routed', backendIndex: Number(ticketed[1]), eventId, ticket: ticketed[2]! } : null;
  }
  const dot = value.indexOf('.');
  if (dot <= 0 || dot > 6) return null;
  const index = Number(value.slice(0, dot));
  const eventId = value.slice(dot + 1);
  if (!/^\d+$/.test(value.slice(0, dot)) || !isResumableEventId(eventId)) return null;
  return { kind: 'routed', backendIndex: index, eventId, ticket: null };
}
