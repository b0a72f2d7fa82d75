/**
 * The message endpoint a legacy HTTP+SSE server (MCP 2024-11-05) announces in its first event:
 * the URI the client POSTs every message to, usually relative and carrying the session's id
 * (`/messages?sessionId=…`). The server chose it, and the gateway sends the backend's outgoing
 * credentials there, so it is taken only on the backend's own origin: an SSE server (or whatever
 * answers at its URL) cannot send the gateway's credentials, or its requests, anywhere else.
 */

/** The longest endpoint taken, in characters: a URI with a session id is a few dozen. */
export const MAX_ENDPOINT_CHARS = 8 * 1024;

/** Characters that never belong in an announced URI: C0 controls (CR, LF, NUL, TAB...) and DEL. */
const CONTROL = /[\x00-\x1f\x7f]/;

/** Longest origin quoted in a refusal: the server chose it. */
const MAX_QUOTED = 200;

/**
 * The announced endpoint resolved against the URL of the event stream (`streamUrl`), or why it is
 * refused, worded to follow `backend "<name>" `. Controls are refused before parsing, since the
 * URL parser silently drops tabs and line breaks (a value with them is not what the server meant
 * to say, or is an attempt to say something else).
 */
export function announcedEndpoint(data: string, streamUrl: URL): URL | string {
  if (data.length > MAX_ENDPOINT_CHARS) return `announced a message endpoint longer than ${MAX_ENDPOINT_CHARS / 1024} KiB: refused`;
  if (CONTROL.test(data)) return 'announced a message endpoint with a control character (CR, LF, NUL...) in it: refused';
  if (data.trim().length === 0) return 'announced an empty message endpoint: refused';
  let url: URL;
  try {
    url = new URL(data, streamUrl);
  } catch {
    return 'announced a message endpoint that is not a URI: refused';
  }
  if (url.origin !== streamUrl.origin) {
    const origin = url.origin === 'null' ? `${url.protocol}//${url.host}` : url.origin;
    const quoted = origin.length > MAX_QUOTED ? origin.slice(0, MAX_QUOTED) + '…' : origin;
    return `announced an endpoint on another origin (${quoted}): refused`;
  }
  return url;
}

/** What is written on the request line for `endpoint`: its path and query, percent-encoded by the URL parser (never its fragment or userinfo). */
export function requestTarget(endpoint: URL): string {
  return endpoint.pathname + endpoint.search;
}
