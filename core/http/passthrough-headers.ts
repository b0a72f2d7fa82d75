/**
 * `spec.passthroughHeaders`: the client's request headers an operator lets reach every backend
 * (ToolHive's field of the same name). In transparent mode the client's headers pass anyway,
 * except the hop-by-hop ones, its credentials and its identity and proxy headers
 * (identity-headers.ts): a name listed here lets one of those last ones through. In aggregated
 * mode the gateway writes each backend request itself and passes on nothing of the client's but
 * what is listed here.
 *
 * Values are the client's, as the HTTP parser took them (it refuses CR, LF and NUL in a value on
 * both engines), and go to the backend after every other header, so a credential a
 * `prepareBackend` hook sets in the same header replaces them (OutgoingHeaders.set).
 */
import type { RequestHead } from './request-head.ts';

/** Lower-case header names. */
export type PassthroughHeaders = ReadonlySet<string>;

export const NO_PASSTHROUGH: PassthroughHeaders = new Set();

/** Appends to `list` the `[name, value]` pairs of `from` whose name `allowed` holds, in order. */
function appendAllowed(list: string[], from: readonly string[], allowed: PassthroughHeaders): void {
  for (let i = 0; i < from.length; i += 2) if (allowed.has(from[i]!)) list.push(from[i]!, from[i + 1]!);
}

/** Transparent mode: the identity headers `allowed` names join the headers forwarded. */
export function passIdentity(forward: string[], head: RequestHead, allowed: PassthroughHeaders): void {
  if (head.identity !== null && allowed.size !== 0) appendAllowed(forward, head.identity, allowed);
}

/** Aggregated mode: the client's headers `allowed` names, appended to a backend request's `list`. */
export function passAllowed(list: string[], head: RequestHead, allowed: PassthroughHeaders): void {
  if (allowed.size === 0) return;
  appendAllowed(list, head.forward, allowed);
  if (head.identity !== null) appendAllowed(list, head.identity, allowed);
}
