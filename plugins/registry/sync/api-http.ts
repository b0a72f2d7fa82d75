/**
 * HTTP to one peer registry, for the API source (api-source.ts): GET requests through the
 * core's address guard (core/http/address-guard.ts: the resolved address is checked at connect
 * time, so a DNS answer cannot swap a public name for a private one), each bounded in time and
 * size, with the bearer token sent to the peer's own origin only.
 *
 * - Redirects: at most 3, to the same origin only; a redirect elsewhere fails the request
 *   without following it (the token never travels to another origin).
 * - 429 and 503: retried after `Retry-After` (seconds or an HTTP date; 1 s, 2 s, 4 s… without
 *   one), at most 4 times, and only when the wait ends before the sync's deadline.
 * - No `accept-encoding` is sent and none is decoded, so a compressed body cannot expand past the
 *   size bound.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isIP } from 'node:net';
import { Buffer } from 'node:buffer';
import { Agent, request } from 'undici';
import { guardedLookup, refusedAddress, type AddressPolicy } from '@gatehouse-mcp/gateway';
import { reasonOf } from '../../incoming-auth/fetch-reason.ts';

export interface PeerHttpOptions {
  /** The peer's base URL: its origin is the only one requests go to and the token is sent to. */
  readonly base: URL;
  readonly token: string | null;
  /** Whether private, link-local, loopback… addresses may be connected to. */
  readonly allowPrivateAddresses: boolean;
  readonly requestTimeoutMs: number;
  /** Largest body accepted for one response. */
  readonly maxBytes: number;
}

export interface PeerResponse {
  readonly status: number;
  /** The body of a 2xx answer (empty for other statuses, which are not read). */
  readonly body: Buffer;
}

/** A request that failed: its message is for the operator and names no secret. */
export class PeerHttpError extends Error {
  override readonly name = 'PeerHttpError';
}

const MAX_REDIRECTS = 3;
const MAX_RETRIES = 4;
const PRIVATE_HINT = 'only sources defined in the config file, or any source when sync.allowPrivateAddresses is true, may reach such addresses';

/** The short form of a URL for messages: origin and path, no query (cursors can be long). */
export function shortUrl(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

/** `Retry-After` in milliseconds (delta-seconds or an HTTP date), or null when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, now = Date.now()): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return null;
  const trimmed = text.trim();
  if (/^\d{1,9}$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

export class PeerHttp {
  readonly #agent: Agent;
  readonly #origin: string;
  readonly #policy: AddressPolicy;
  readonly #token: string | null;
  readonly #timeoutMs: number;
  readonly #maxBytes: number;

  constructor(options: PeerHttpOptions) {
    this.#origin = options.base.origin;
    this.#policy = { allowPrivate: options.allowPrivateAddresses, allowLoopback: options.allowPrivateAddresses, hint: PRIVATE_HINT };
    this.#token = options.token;
    this.#timeoutMs = options.requestTimeoutMs;
    this.#maxBytes = options.maxBytes;
    this.#agent = new Agent({
      connect: { timeout: options.requestTimeoutMs, lookup: guardedLookup(this.#policy) },
      headersTimeout: options.requestTimeoutMs,
      bodyTimeout: options.requestTimeoutMs,
      connections: 2,
    });
  }

  /**
   * GET `url` (of the peer's origin). `signal` is the whole sync's (abort, time bound) and
   * `deadline` when it ends: a retry that would wait past it is not made.
   */
  async get(url: URL, signal: AbortSignal, deadline: number): Promise<PeerResponse> {
    let current = url;
    let redirects = 0;
    let retries = 0;
    for (;;) {
      this.#checkAddress(current);
      const answer = await this.#once(current, signal);
      if (answer.location !== null) {
        const target = resolveLocation(answer.location, current);
        if (target.origin !== this.#origin) {
          throw new PeerHttpError(`the peer redirected (${answer.status}) to another origin, ${target.origin}: not followed (the token is only ever sent to ${this.#origin})`);
        }
        if (++redirects > MAX_REDIRECTS) throw new PeerHttpError(`more than ${MAX_REDIRECTS} redirects`);
        current = target;
        continue;
      }
      if (answer.status === 429 || answer.status === 503) {
        const wait = answer.retryAfterMs ?? 1000 * 2 ** retries;
        if (retries++ >= MAX_RETRIES) throw new PeerHttpError(`the peer answered ${answer.status} ${MAX_RETRIES + 1} times in a row`);
        if (Date.now() + wait > deadline) {
          throw new PeerHttpError(`the peer answered ${answer.status} and asks to retry in ${Math.ceil(wait / 1000)} s, past the sync's time bound`);
        }
        await sleep(wait, undefined, { signal }).catch(() => undefined);
        if (signal.aborted) throw abortedError(signal);
        continue;
      }
      return { status: answer.status, body: answer.body };
    }
  }

  close(): Promise<void> {
    return this.#agent.close();
  }

  /** IP literals never reach the guarded `lookup`: they are checked here. */
  #checkAddress(url: URL): void {
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    if (isIP(host) === 0) return;
    const refused = refusedAddress(host, this.#policy);
    if (refused !== null) throw new PeerHttpError(`refusing to connect to ${url.host}: ${refused}`);
  }

  async #once(url: URL, signal: AbortSignal): Promise<{ status: number; location: string | null; retryAfterMs: number | null; body: Buffer }> {
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const both = AbortSignal.any([signal, timeout]);
    const failed = (what: string, err: unknown): PeerHttpError => {
      if (signal.aborted) return abortedError(signal);
      if (timeout.aborted) return new PeerHttpError(`the peer did not answer within ${this.#timeoutMs / 1000} s`);
      return new PeerHttpError(`${what}: ${reasonOf(err)}`, { cause: err });
    };
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'gatehouse-registry (api source)' };
    if (this.#token !== null && url.origin === this.#origin) headers.authorization = `Bearer ${this.#token}`;
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(url, { dispatcher: this.#agent, method: 'GET', headers, signal: both });
    } catch (err) {
      throw failed('the request failed', err);
    }
    // A body destroyed on purpose (over the bound) emits an error nobody else listens to: without
    // this, a peer could crash the process with an oversize answer.
    res.body.on('error', () => undefined);
    const status = res.statusCode;
    const location = res.headers.location;
    if (status >= 300 && status < 400 && location !== undefined) {
      await res.body.dump().catch(() => undefined);
      return { status, location: Array.isArray(location) ? (location[0] ?? '') : location, retryAfterMs: null, body: Buffer.alloc(0) };
    }
    if (status < 200 || status > 299) {
      await res.body.dump().catch(() => undefined);
      return { status, location: null, retryAfterMs: retryAfterMs(res.headers['retry-after']), body: Buffer.alloc(0) };
    }
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > this.#maxBytes) {
      res.body.destroy();
      throw new PeerHttpError(`the answer is ${declared} bytes, over the bound of ${this.#maxBytes} bytes per page`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > this.#maxBytes) {
          res.body.destroy();
          throw new PeerHttpError(`the answer is over the bound of ${this.#maxBytes} bytes per page`);
        }
        chunks.push(chunk as Buffer);
      }
    } catch (err) {
      if (err instanceof PeerHttpError) throw err;
      throw failed('reading the answer failed', err);
    }
    return { status, location: null, retryAfterMs: null, body: Buffer.concat(chunks, size) };
  }
}

function resolveLocation(location: string, base: URL): URL {
  try {
    return new URL(location, base);
  } catch {
    throw new PeerHttpError(`the peer redirected to an invalid location`);
  }
}

function abortedError(signal: AbortSignal): PeerHttpError {
  const reason: unknown = signal.reason;
  const timedOut = reason instanceof DOMException && reason.name === 'TimeoutError';
  return new PeerHttpError(timedOut ? "the sync ran past its time bound" : 'the sync was stopped (the server is stopping)');
}
