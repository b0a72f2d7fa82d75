/**
 * HTTP to one issuer: discovery, JWKS and introspection requests, with the issuer rules of
 * Decisions of core/README.md (https, or plain http on loopback), the address guard (core/http/address-guard.ts), an
 * optional extra CA (cluster mode: the service-account `ca.crt`), a timeout, a response size
 * cap, no redirects, and a bearer token sent only to the issuer's own origin (cluster mode: the
 * service-account token, which must never travel to a third-party JWKS host).
 *
 * Built on undici: one keep-alive Agent per issuer, whose `connect` options carry the CA and the
 * guarded `lookup`.
 */
import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import { Agent, fetch as undiciFetch, type RequestInit as UndiciRequestInit } from 'undici';
import { guardedLookup, isLoopbackHost, refusedAddress, type AddressPolicy } from '@gatehouse-mcp/gateway';

export interface IssuerHttpOptions {
  /** The issuer URL: its origin is the only one that gets `bearerToken`. */
  readonly issuer: URL;
  /** Extra trusted CA certificates (PEM), added to the default roots. */
  readonly ca?: string | undefined;
  readonly bearerToken?: string | (() => string) | undefined;
  readonly allowPrivateIp: boolean;
  readonly timeoutMs: number;
  /** Largest response body accepted (default 1 MiB). */
  readonly maxBytes?: number;
}

export interface JsonResponse {
  readonly status: number;
  readonly json: unknown;
  readonly cacheControl: string | null;
}

/** What openid-client gives its `customFetch`. */
export interface FetchInit {
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly body?: unknown;
  readonly redirect?: 'manual';
  readonly signal?: AbortSignal;
}

/** A failure to talk to the issuer (network, TLS, timeout, status, not JSON). Its message names no secret. */
export class IssuerFetchError extends Error {
  override name = 'IssuerFetchError';
  readonly status: number | null;
  constructor(message: string, status: number | null = null, options?: { cause?: unknown }) {
    super(message, options);
    this.status = status;
  }
}

export class IssuerHttp {
  readonly #agent: Agent;
  readonly #origin: string;
  readonly #policy: AddressPolicy;
  readonly #token: string | (() => string) | undefined;
  readonly #timeoutMs: number;
  readonly #maxBytes: number;

  constructor(options: IssuerHttpOptions) {
    this.#origin = options.issuer.origin;
    this.#policy = { allowPrivate: options.allowPrivateIp, allowLoopback: isLoopbackHost(options.issuer.hostname) };
    this.#token = options.bearerToken;
    this.#timeoutMs = options.timeoutMs;
    this.#maxBytes = options.maxBytes ?? 1024 * 1024;
    this.#agent = new Agent({
      connect: {
        timeout: options.timeoutMs,
        lookup: guardedLookup(this.#policy),
        ...(options.ca === undefined ? {} : { ca: [...rootCertificates, options.ca] }),
      },
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      maxResponseSize: this.#maxBytes,
      connections: 4,
    });
  }

  /** Throws when `url` may not be fetched: not https (except loopback), or an IP literal the policy refuses. */
  checkUrl(url: URL): void {
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
      throw new IssuerFetchError(`${url.origin} must use https (plain http is allowed only on loopback hosts)`);
    }
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    if (isIP(host) !== 0) {
      const refused = refusedAddress(host, this.#policy);
      if (refused !== null) throw new IssuerFetchError(`refusing to fetch ${url.origin}: ${refused}`);
    }
  }

  #headers(url: URL, extra: Record<string, string>): Record<string, string> {
    const headers: Record<string, string> = { 'user-agent': 'gatehouse', ...extra };
    const hasOwn = Object.keys(extra).some((name) => name.toLowerCase() === 'authorization');
    if (this.#token !== undefined && !hasOwn && url.origin === this.#origin) {
      headers.authorization = `Bearer ${typeof this.#token === 'function' ? this.#token() : this.#token}`;
    }
    return headers;
  }

  /** GET a JSON document. Throws IssuerFetchError for anything but a 2xx JSON answer. */
  async getJson(href: string): Promise<JsonResponse> {
    const url = new URL(href);
    this.checkUrl(url);
    let res: Awaited<ReturnType<typeof undiciFetch>>;
    try {
      res = await undiciFetch(url, {
        dispatcher: this.#agent,
        headers: this.#headers(url, { accept: 'application/json' }),
        redirect: 'error',
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (err) {
      throw new IssuerFetchError(`GET ${url.origin}${url.pathname} failed: ${reasonOf(err)}`, null, { cause: err });
    }
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      throw new IssuerFetchError(`GET ${url.origin}${url.pathname}: reading the body failed: ${reasonOf(err)}`, res.status, { cause: err });
    }
    if (res.status < 200 || res.status > 299) {
      throw new IssuerFetchError(`GET ${url.origin}${url.pathname} answered ${res.status}`, res.status);
    }
    try {
      return { status: res.status, json: JSON.parse(text) as unknown, cacheControl: res.headers.get('cache-control') };
    } catch {
      throw new IssuerFetchError(`GET ${url.origin}${url.pathname} did not answer JSON`, res.status);
    }
  }

  /** A Fetch API function for openid-client (`customFetch`), going through the same checks and agent. */
  readonly fetch = async (href: string, init: FetchInit): Promise<Response> => {
    const url = new URL(href);
    this.checkUrl(url);
    const request: UndiciRequestInit = {
      dispatcher: this.#agent,
      method: init.method,
      headers: this.#headers(url, init.headers),
      body: init.body as UndiciRequestInit['body'],
      redirect: 'manual',
      signal: init.signal ?? AbortSignal.timeout(this.#timeoutMs),
    };
    // undici's Response is the class Node's global fetch returns; only the type declarations differ.
    return (await undiciFetch(url, request)) as unknown as Response;
  };

  close(): Promise<void> {
    return this.#agent.close();
  }
}

/** A short reason for a failed fetch: the deepest cause's message (undici wraps them in "fetch failed"). */
export function reasonOf(err: unknown): string {
  let current: unknown = err;
  for (let depth = 0; depth < 4 && current instanceof Error && current.cause !== undefined; depth++) current = current.cause;
  return current instanceof Error ? current.message : String(current);
}
