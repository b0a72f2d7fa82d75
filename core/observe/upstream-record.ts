/**
 * What the seam says about one request to a backend (channels.ts `gatehouse:upstream:*`): one
 * object per exchange, published at its start, its response head, and its end or failure.
 *
 * At start a subscriber may add headers (`setHeader`: the tracer's `traceparent`) or replace the
 * body (`replaceBody`: the tracer's `params._meta` of a 2026-07-28 request), as undici lets a
 * `undici:request:create` subscriber add headers. What it adds is checked as a plugin's outgoing
 * header is: a header value with CR, LF or NUL would split the request, and is refused.
 */
import { performance } from 'node:perf_hooks';
import type { RequestRecord } from './request-record.ts';

const NAME = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;
const UNSAFE_VALUE = /[\r\n\0]/;

/** Throws on a header a subscriber may not add: a name that is not a lower-case token, or CR, LF or NUL in the value. */
export function checkAddedHeader(name: string, value: string): void {
  if (!NAME.test(name)) throw new TypeError(`invalid header name ${JSON.stringify(name)} (lower-case token expected)`);
  if (UNSAFE_VALUE.test(value)) throw new TypeError(`invalid value for header ${name}: CR, LF and NUL are not allowed`);
}

/** How an exchange ended: read to its end, stopped by the gateway (the client left), or failed. */
export type UpstreamOutcome = 'ok' | 'aborted' | 'error';

export class UpstreamRecord {
  /** The client request this exchange serves, when the requests are scoped (request-scope.ts); else null. */
  readonly request: RequestRecord | null;
  /** The backend's `metadata.name`. */
  readonly backend: string;
  /** `streamable-http`, `stdio` or `sse`. */
  readonly transport: string;
  /** The HTTP method of the request to the backend. */
  readonly method: string;
  readonly path: string;
  readonly startedAt: number;
  readonly startTime: number;
  /** The request's headers, `[name, value, ...]`, names in lower case. */
  readonly headers: string[];
  #body: Buffer | null;
  #changed = false;

  /** The backend's HTTP status, once its head arrived (0 before, and for a failure before any). */
  status = 0;
  /** Seconds from the start to the response head. */
  headSeconds = 0;
  /** Seconds from the start to the end or the failure. */
  seconds = 0;
  outcome: UpstreamOutcome = 'ok';
  /** The gateway's error code of a failure (`backend_unavailable`, `backend_timeout`, ...). */
  errorCode: string | null = null;

  constructor(request: RequestRecord | null, backend: string, transport: string, method: string, path: string, headers: readonly string[], body: Buffer | null) {
    this.request = request;
    this.backend = backend;
    this.transport = transport;
    this.method = method;
    this.path = path;
    this.startedAt = performance.now();
    this.startTime = performance.timeOrigin + this.startedAt;
    this.headers = headers.slice();
    this.#body = body;
  }

  get body(): Buffer | null {
    return this.#body;
  }

  /** True once a subscriber added a header or replaced the body: the exchange then sends these. */
  get changed(): boolean {
    return this.#changed;
  }

  header(name: string): string | undefined {
    const list = this.headers;
    for (let i = 0; i < list.length; i += 2) if (list[i] === name) return list[i + 1];
    return undefined;
  }

  /** Sets `name` (lower case) to `value`, replacing what it had. Throws on a bad name, or CR, LF or NUL in the value. */
  setHeader(name: string, value: string): void {
    checkAddedHeader(name, value);
    this.removeHeader(name);
    this.headers.push(name, value);
  }

  /** Removes every value of `name` (lower case): a client's header that transparent mode would pass on, say. */
  removeHeader(name: string): void {
    const list = this.headers;
    for (let i = list.length - 2; i >= 0; i -= 2) if (list[i] === name) list.splice(i, 2);
    this.#changed = true;
  }

  /** Replaces the body the backend gets (only at start: it has not been sent yet). */
  replaceBody(body: Buffer): void {
    this.#body = body;
    this.#changed = true;
  }
}
