/**
 * What the seam says about one of the gateway's own HTTP calls (channels.ts
 * `gatehouse:outbound:*`): an issuer's discovery or JWKS read, an introspection, a token
 * exchange, a call to an upstream identity provider. Those run in a worker thread
 * (plugins/incoming-auth/issuer-http.ts says why), where undici's `undici:request:*` channels are
 * not this thread's; the caller publishes this record instead, on the thread and in the async
 * context of the request it serves, so that a subscriber (the tracer) finds that request.
 *
 * At start a subscriber may add headers (`setHeader`: the tracer's `traceparent`), checked as an
 * UpstreamRecord's are. The URL's path and query are not in the record: an issuer's URL may carry
 * what a trace should not.
 */
import { checkAddedHeader } from './upstream-record.ts';

/** Headers no subscriber sets on an outbound call. */
const RESERVED = new Set(['authorization', 'proxy-authorization', 'cookie', 'host', 'content-length', 'transfer-encoding', 'connection', 'accept-encoding']);

export class OutboundRecord {
  readonly method: string;
  /** `scheme://host[:port]` of the call. */
  readonly origin: string;
  /** Headers added by subscribers at start, `[name, value, ...]`: sent with the call. */
  readonly headers: string[] = [];
  /** The HTTP status of the answer (0 until it came, and for a failure). */
  status = 0;
  /** The name of the error of a failure (`TimeoutError`, `AbortError`, `Error`), else null. */
  error: string | null = null;

  constructor(method: string, origin: string) {
    this.method = method;
    this.origin = origin;
  }

  /**
   * Sets `name` (lower case) to `value`. Throws on a bad name, on CR, LF or NUL in the value, and
   * on a header that carries credentials or routing (`authorization`, `cookie`, `host`, ...): a
   * subscriber adds context to the call, never who makes it or where it goes.
   */
  setHeader(name: string, value: string): void {
    checkAddedHeader(name, value);
    if (RESERVED.has(name)) throw new TypeError(`a subscriber may not set ${name} on the gateway's own calls`);
    const list = this.headers;
    for (let i = list.length - 2; i >= 0; i -= 2) if (list[i] === name) list.splice(i, 2);
    list.push(name, value);
  }
}
