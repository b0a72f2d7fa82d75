/**
 * The observation seam: named `node:diagnostics_channel` channels on which the gateway publishes
 * what happens to a request and to each exchange with a backend, once, where it happens (the way
 * undici publishes `undici:request:*`). Anyone in the process may subscribe: the access log, the
 * route metrics, the tracer, a plugin.
 *
 * A channel nobody subscribes to costs its publisher one `hasSubscribers` read: the message is
 * built only after that check. The messages are the records of request-record.ts and
 * upstream-record.ts: one object per request or exchange, the same object on each of its channels,
 * so a subscriber can keep what it needs in a WeakMap keyed by it.
 */
import diagnostics from 'node:diagnostics_channel';

/** The channel names, public: `diagnostics_channel.subscribe(CHANNELS.requestEnd, fn)`. */
export const CHANNELS = {
  /** A request was taken (its head read, nothing decided yet): a RequestRecord. */
  requestStart: 'gatehouse:request:start',
  /** Its response is done, or the client went away: the same RequestRecord, its outcome filled in. */
  requestEnd: 'gatehouse:request:end',
  /** A request to a backend is about to be sent: an UpstreamRecord (its headers may still be added to). */
  upstreamStart: 'gatehouse:upstream:start',
  /** The backend's response head arrived: the same UpstreamRecord, with status and time to head. */
  upstreamHeaders: 'gatehouse:upstream:headers',
  /** The backend's answer was read to its end (or the gateway stopped reading it, `aborted`). */
  upstreamEnd: 'gatehouse:upstream:end',
  /** The exchange failed: unreachable, timed out, refused at a limit, or its answer broke a bound. */
  upstreamError: 'gatehouse:upstream:error',
  /**
   * One of the gateway's own HTTP calls (discovery, JWKS, introspection, a token exchange, an
   * upstream identity provider) is about to be sent: an OutboundRecord (headers may still be
   * added). They run in a worker thread, out of reach of undici's channels on this one: the
   * caller publishes these, in the async context of the request it serves.
   */
  outboundStart: 'gatehouse:outbound:start',
  /** Its answer came (read whole): the same OutboundRecord, with the status. */
  outboundEnd: 'gatehouse:outbound:end',
  /** It failed (unreachable, refused address, timed out, too large, aborted): the same OutboundRecord, with the error's name. */
  outboundError: 'gatehouse:outbound:error',
  /** The embedded authorization server did something an audit records (a sign-in, a consent, a registration, a token): an OperationEvent. */
  authEvent: 'gatehouse:auth:event',
  /** The registry server changed what it serves (a publish, a delete, an admin change), or refused to: an OperationEvent. */
  registryChange: 'gatehouse:registry:change',
} as const;

export type ChannelName = (typeof CHANNELS)[keyof typeof CHANNELS];

export const requestStart = diagnostics.channel(CHANNELS.requestStart);
export const requestEnd = diagnostics.channel(CHANNELS.requestEnd);
export const upstreamStart = diagnostics.channel(CHANNELS.upstreamStart);
export const upstreamHeaders = diagnostics.channel(CHANNELS.upstreamHeaders);
export const upstreamEnd = diagnostics.channel(CHANNELS.upstreamEnd);
export const upstreamError = diagnostics.channel(CHANNELS.upstreamError);
export const outboundStart = diagnostics.channel(CHANNELS.outboundStart);
export const outboundEnd = diagnostics.channel(CHANNELS.outboundEnd);
export const outboundError = diagnostics.channel(CHANNELS.outboundError);
export const authEvent = diagnostics.channel(CHANNELS.authEvent);
export const registryChange = diagnostics.channel(CHANNELS.registryChange);

/** True when someone listens to a request's channels: the server then builds its record. */
export function requestObserved(): boolean {
  return requestStart.hasSubscribers || requestEnd.hasSubscribers;
}

/** True when someone listens to an exchange's channels: the exchange then builds its record. */
export function upstreamObserved(): boolean {
  return upstreamStart.hasSubscribers || upstreamHeaders.hasSubscribers || upstreamEnd.hasSubscribers || upstreamError.hasSubscribers;
}
