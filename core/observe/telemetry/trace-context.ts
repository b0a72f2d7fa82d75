/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) as the gateway reads it from a client
 * it trusts: `traceparent` and `tracestate`, strictly. A value that is not exactly what the
 * recommendation allows (CR, LF or anything outside its characters, oversize, all-zero ids,
 * version ff, too many list members) is ignored, never repaired and never passed on: the request
 * then starts a trace of its own.
 */

/** A parent the client named: its trace, its span, whether it sampled, and its tracestate (validated, or null). */
export interface RemoteParent {
  readonly traceId: string;
  readonly spanId: string;
  readonly sampled: boolean;
  readonly traceState: string | null;
}

// version "-" trace-id "-" parent-id "-" trace-flags; a future version may append fields after a "-".
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-[\x21-\x7e]*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);
/** Longer than any traceparent worth reading: 55 characters for version 00. */
const MAX_TRACEPARENT = 256;
/** The recommendation's limits on tracestate: 512 characters are kept at least, 32 list members at most. */
const MAX_TRACESTATE = 512;
const MAX_MEMBERS = 32;
// A key: lcalpha then up to 255 of lcalpha, digits, _ - * /, optionally tenant@system; a value: 0x20-0x7e but , and =, not ending in a space.
const MEMBER = /^(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;

/** The parent a `traceparent` value names, or null when it is not a valid one. */
export function parseTraceparent(value: string | undefined): { traceId: string; spanId: string; sampled: boolean } | null {
  if (value === undefined || value.length > MAX_TRACEPARENT) return null;
  const match = TRACEPARENT.exec(value);
  if (match === null) return null;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

/** `value` when it is a valid tracestate (list members separated by commas, optional spaces), else null. */
export function validTracestate(value: string | undefined): string | null {
  if (value === undefined || value.length === 0 || value.length > MAX_TRACESTATE) return null;
  const members = value.split(',');
  if (members.length > MAX_MEMBERS) return null;
  const keys = new Set<string>();
  for (const raw of members) {
    const member = raw.replace(/^[ \t]+|[ \t]+$/g, '');
    if (member === '') continue;
    if (!MEMBER.test(member)) return null;
    const key = member.slice(0, member.indexOf('='));
    if (keys.has(key)) return null;
    keys.add(key);
  }
  return keys.size === 0 ? null : value;
}

/** The client's parent, from a `traceparent` (and `tracestate`) it sent, or null. */
export function remoteParent(traceparent: string | undefined, tracestate: string | undefined): RemoteParent | null {
  const parent = parseTraceparent(traceparent);
  if (parent === null) return null;
  return { ...parent, traceState: validTracestate(tracestate) };
}

/** The `traceparent` value of a span: version 00. */
export function formatTraceparent(traceId: string, spanId: string, sampled: boolean): string {
  return '00-' + traceId + '-' + spanId + (sampled ? '-01' : '-00');
}
