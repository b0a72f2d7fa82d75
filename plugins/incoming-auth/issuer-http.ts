/**
 * HTTP to one issuer: discovery, JWKS and introspection requests, with the issuer rules of
 * Decisions of core/README.md (https, or plain http on loopback), the address guard (core/http/address-guard.ts), an
 * optional extra CA (cluster mode: the service-account `ca.crt`), a timeout, a response size
 * cap, no redirects, and a bearer token sent only to the issuer's own origin (cluster mode: the
 * service-account token, which must never travel to a third-party JWKS host).
 *
 * Built on undici, run in a worker thread of its own (issuer-http-worker.ts says why: the
 * proxied requests' speed): one keep-alive Agent per issuer there, whose `connect` options carry
 * the CA and the guarded `lookup`. The checks that need no connection (the URL, the bearer
 * token's origin) are made here, before a request leaves this thread.
 */
import diagnostics from 'node:diagnostics_channel';
import { isIP } from 'node:net';
import { Worker } from 'node:worker_threads';
import { Buffer } from 'node:buffer';
import { CHANNELS, isLoopbackHost, OutboundRecord, refusedAddress, type AddressPolicy } from '@gatehouse-mcp/gateway';
import { reasonOf } from './fetch-reason.ts';
import type { AgentSpec, FailedPhase, FetchSpec, FromWorker, ToWorker } from './issuer-http-worker.ts';

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

/** A fetch that failed in the worker: where, and why (the deepest cause's message). */
class WorkerFetchError extends Error {
  readonly phase: FailedPhase;
  readonly status: number | null;
  /** The failure's code where it had one (undici's `UND_ERR_HEADERS_TIMEOUT`, say): callers tell timeouts apart by it. */
  readonly code: string | undefined;
  constructor(failed: Extract<FromWorker, { type: 'failed' }>) {
    super(failed.reason);
    this.name = failed.timeout ? 'TimeoutError' : 'Error';
    this.phase = failed.phase;
    this.status = failed.status;
    this.code = failed.code ?? undefined;
  }
}

type Answer = Extract<FromWorker, { type: 'answer' }>;

interface Pending {
  readonly resolve: (answer: Answer) => void;
  readonly reject: (err: Error) => void;
}

/**
 * The main thread's end of the issuer HTTP thread, one per process: started with the first
 * agent, ended with the last one's close. It keeps the process alive only while a request is
 * in flight (an idle gateway's issuer clients must not stop it from exiting). Should the thread
 * die, what was in flight fails with the reason, and the next request starts a new one.
 */
class IssuerHttpThread {
  #worker: Worker | null = null;
  /** Agents declared to the current worker (a new worker is told them again). */
  readonly #agents = new Map<number, AgentSpec>();
  readonly #pending = new Map<number, Pending>();
  readonly #closing = new Map<number, () => void>();
  #nextId = 1;
  #nextAgent = 1;

  declare(spec: AgentSpec): number {
    const agent = this.#nextAgent++;
    this.#agents.set(agent, spec);
    this.#worker?.postMessage({ type: 'agent', agent, spec } satisfies ToWorker);
    return agent;
  }

  #started(): Worker {
    if (this.#worker !== null) return this.#worker;
    // Bounded as a client's request is: its answers are capped (maxBytes), and so is its heap.
    // Its young generation is kept small (it handles a few small answers; V8's default let the
    // thread hold some 45 MB of RSS, 35 with this). None of the main thread's node flags: the
    // entry registers its own loader, and some flags a process may be started with
    // (`--input-type`, say) stop a worker from starting at all.
    const worker = new Worker(new URL('./issuer-http-worker-entry.mjs', import.meta.url), {
      name: 'gatehouse issuer http',
      execArgv: [],
      resourceLimits: { maxOldGenerationSizeMb: 128, maxYoungGenerationSizeMb: 4 },
    });
    worker.unref();
    worker.on('message', (message: FromWorker) => this.#received(message));
    worker.on('error', (err) => this.#lost(worker, err.message));
    worker.on('exit', (code) => this.#lost(worker, `it exited with code ${code}`));
    for (const [agent, spec] of this.#agents) worker.postMessage({ type: 'agent', agent, spec } satisfies ToWorker);
    this.#worker = worker;
    return worker;
  }

  #received(message: FromWorker): void {
    if (message.type === 'closed') {
      this.#closing.get(message.agent)?.();
      this.#closing.delete(message.agent);
      this.#holdProcess();
      this.#endIfUnused();
      return;
    }
    const pending = this.#pending.get(message.id);
    if (pending === undefined) return;
    this.#settled(message.id);
    if (message.type === 'answer') pending.resolve(message);
    else pending.reject(new WorkerFetchError(message));
  }

  #settled(id: number): void {
    this.#pending.delete(id);
    this.#holdProcess();
    this.#endIfUnused();
  }

  /** Ends the thread once no agent, request or close is left for it. */
  #endIfUnused(): void {
    const worker = this.#worker;
    if (worker === null || this.#agents.size + this.#pending.size + this.#closing.size > 0) return;
    this.#worker = null;
    void worker.terminate();
  }

  /** The thread keeps the process alive while a request or a close waits for it, and only then. */
  #holdProcess(): void {
    if (this.#pending.size + this.#closing.size > 0) this.#worker?.ref();
    else this.#worker?.unref();
  }

  #lost(worker: Worker, why: string): void {
    if (this.#worker !== worker) return;
    this.#worker = null;
    const reason = `the issuer HTTP thread stopped: ${why}`;
    for (const pending of this.#pending.values()) pending.reject(new Error(reason));
    this.#pending.clear();
    for (const done of this.#closing.values()) done();
    this.#closing.clear();
  }

  /**
   * One request on `agent`; `signal` (the caller's) aborts it. The thread enforces the request's
   * time limit; a backstop a little later is for a thread that stops answering (or a message it
   * could not read), so that no caller waits for ever.
   */
  request(agent: number, spec: FetchSpec, signal: AbortSignal | undefined): Promise<Answer> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    const worker = this.#started();
    const id = this.#nextId++;
    return new Promise<Answer>((resolve, reject) => {
      const onAbort = (): void => gaveUp(signal!.reason as Error);
      const backstop = setTimeout(() => gaveUp(new Error(`the issuer HTTP thread did not answer within ${spec.timeoutMs + BACKSTOP_MS} ms`)), spec.timeoutMs + BACKSTOP_MS);
      backstop.unref();
      signal?.addEventListener('abort', onAbort, { once: true });
      const off = (): void => {
        clearTimeout(backstop);
        signal?.removeEventListener('abort', onAbort);
      };
      /** The caller stops waiting: the thread is told to drop the request. */
      const gaveUp = (err: Error): void => {
        if (!this.#pending.has(id)) return;
        off();
        worker.postMessage({ type: 'abort', id } satisfies ToWorker);
        this.#settled(id);
        reject(err);
      };
      this.#pending.set(id, {
        resolve: (answer) => {
          off();
          resolve(answer);
        },
        reject: (err) => {
          off();
          reject(err);
        },
      });
      this.#holdProcess();
      worker.postMessage({ type: 'fetch', id, agent, spec } satisfies ToWorker);
    });
  }

  /** Closes `agent` (its keep-alive connections); the thread ends once nothing is left for it. */
  close(agent: number): Promise<void> {
    if (!this.#agents.delete(agent)) return Promise.resolve();
    const worker = this.#worker;
    if (worker === null) return Promise.resolve();
    if (this.#agents.size + this.#pending.size + this.#closing.size === 0) {
      this.#worker = null;
      return worker.terminate().then(() => undefined);
    }
    return new Promise<void>((resolve) => {
      this.#closing.set(agent, resolve);
      this.#holdProcess();
      worker.postMessage({ type: 'close', agent } satisfies ToWorker);
    });
  }
}

const thread = new IssuerHttpThread();

/** The seam's outbound channels (core/observe/channels.ts): the tracer's CLIENT spans of these calls. */
const outboundStart = diagnostics.channel(CHANNELS.outboundStart);
const outboundEnd = diagnostics.channel(CHANNELS.outboundEnd);
const outboundError = diagnostics.channel(CHANNELS.outboundError);

/** How long after a request's own time limit its caller stops waiting for the thread. */
const BACKSTOP_MS = 5_000;

/** Statuses whose Response must have no body (the Fetch standard's null body statuses that a Response may have). */
const NULL_BODY_STATUSES = new Set([204, 205, 304]);

export class IssuerHttp {
  readonly #agent: number;
  readonly #origin: string;
  readonly #policy: AddressPolicy;
  readonly #token: string | (() => string) | undefined;
  readonly #timeoutMs: number;
  #closed: Promise<void> | null = null;

  constructor(options: IssuerHttpOptions) {
    this.#origin = options.issuer.origin;
    this.#policy = { allowPrivate: options.allowPrivateIp, allowLoopback: isLoopbackHost(options.issuer.hostname) };
    this.#token = options.bearerToken;
    this.#timeoutMs = options.timeoutMs;
    this.#agent = thread.declare({
      allowPrivate: this.#policy.allowPrivate,
      allowLoopback: this.#policy.allowLoopback,
      ca: options.ca,
      timeoutMs: options.timeoutMs,
      maxBytes: options.maxBytes ?? 1024 * 1024,
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

  /**
   * One call through the thread, published on the seam's outbound channels when someone listens
   * (the call runs where undici's own channels do not reach this thread's subscribers).
   */
  async #send(url: URL, spec: FetchSpec, signal: AbortSignal | undefined): Promise<Answer> {
    // A closed client starts no thread (a late JWKS refresh, say).
    if (this.#closed !== null) throw new Error('the issuer client is closed');
    if (!outboundStart.hasSubscribers && !outboundEnd.hasSubscribers && !outboundError.hasSubscribers) return thread.request(this.#agent, spec, signal);
    const record = new OutboundRecord(spec.method, url.origin);
    outboundStart.publish(record);
    const added = record.headers;
    const headers = added.length === 0 ? spec.headers : { ...spec.headers };
    for (let i = 0; i < added.length; i += 2) {
      // Replaces the caller's header of that name in whatever case it was written.
      for (const name of Object.keys(headers)) if (name.toLowerCase() === added[i]) delete headers[name];
      headers[added[i]!] = added[i + 1]!;
    }
    try {
      const answer = await thread.request(this.#agent, headers === spec.headers ? spec : { ...spec, headers }, signal);
      record.status = answer.status;
      outboundEnd.publish(record);
      return answer;
    } catch (err) {
      record.error = err instanceof Error ? err.name : 'Error';
      outboundError.publish(record);
      throw err;
    }
  }

  /** GET a JSON document (with `headers` besides Accept). Throws IssuerFetchError for anything but a 2xx JSON answer. */
  async getJson(href: string, headers: Record<string, string> = {}): Promise<JsonResponse> {
    const url = new URL(href);
    this.checkUrl(url);
    const where = `GET ${url.origin}${url.pathname}`;
    let res: Answer;
    try {
      res = await this.#send(url, { url: url.href, method: 'GET', headers: this.#headers(url, { ...headers, accept: 'application/json' }), body: null, redirect: 'error', timeoutMs: this.#timeoutMs }, undefined);
    } catch (err) {
      if (err instanceof WorkerFetchError && err.phase === 'body') throw new IssuerFetchError(`${where}: reading the body failed: ${err.message}`, err.status, { cause: err });
      throw new IssuerFetchError(`${where} failed: ${reasonOf(err)}`, null, { cause: err });
    }
    if (res.status < 200 || res.status > 299) throw new IssuerFetchError(`${where} answered ${res.status}`, res.status);
    try {
      return { status: res.status, json: JSON.parse(Buffer.from(res.body.buffer, res.body.byteOffset, res.body.byteLength).toString('utf8')) as unknown, cacheControl: headerOf(res.headers, 'cache-control') };
    } catch {
      throw new IssuerFetchError(`${where} did not answer JSON`, res.status);
    }
  }

  /**
   * A Fetch API function for openid-client (`customFetch`), going through the same checks and
   * thread. Its Response is made here from the answer read whole there; a failure rejects as
   * undici's fetch does (a TypeError "fetch failed", the reason as its cause), an abort with the
   * signal's reason.
   */
  readonly fetch = async (href: string, init: FetchInit): Promise<Response> => {
    const url = new URL(href);
    this.checkUrl(url);
    const headers = this.#headers(url, init.headers);
    const spec: FetchSpec = { url: url.href, method: init.method, headers, body: requestBody(init.body, headers), redirect: 'manual', timeoutMs: this.#timeoutMs };
    let res: Answer;
    try {
      res = await this.#send(url, spec, init.signal);
    } catch (err) {
      // As undici's fetch: an abort rejects with the signal's reason, anything else is "fetch failed".
      if (init.signal?.aborted === true && err === init.signal.reason) throw err;
      throw new TypeError('fetch failed', { cause: err });
    }
    return responseOf(res);
  };

  close(): Promise<void> {
    this.#closed ??= thread.close(this.#agent);
    return this.#closed;
  }
}

/**
 * The thread's answer as a WHATWG Response. An answer the Response class refuses (a status past
 * 599, a reason phrase that is not Latin-1), which undici's own fetch would have handed on,
 * fails as a network failure does: a TypeError "fetch failed", the reason as its cause.
 */
function responseOf(res: Answer): Response {
  const body = NULL_BODY_STATUSES.has(res.status) ? null : res.body;
  try {
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  } catch {
    // The reason phrase is decoration: without it, or failing.
  }
  try {
    return new Response(body, { status: res.status, headers: res.headers });
  } catch (err) {
    throw new TypeError('fetch failed', { cause: new Error(`the issuer answered what a Response cannot carry: ${err instanceof Error ? err.message : String(err)}`) });
  }
}

/** The first value of header `name` (lower-case) among `[name, value]` pairs. */
function headerOf(headers: readonly (readonly [string, string])[], name: string): string | null {
  for (const [key, value] of headers) if (key === name) return value;
  return null;
}

/**
 * A request body as the thread takes it: a string or bytes. openid-client sends its forms as
 * URLSearchParams, whose media type undici would have set: it is set here when absent.
 */
function requestBody(body: unknown, headers: Record<string, string>): string | Uint8Array | null {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string') return body;
  if (body instanceof URLSearchParams) {
    if (!Object.keys(headers).some((name) => name.toLowerCase() === 'content-type')) headers['content-type'] = 'application/x-www-form-urlencoded;charset=UTF-8';
    return body.toString();
  }
  if (body instanceof Uint8Array) return new Uint8Array(body);
  if (body instanceof ArrayBuffer) return new Uint8Array(body.slice(0));
  throw new TypeError(`an issuer request body must be a string, URLSearchParams or bytes (got ${Object.prototype.toString.call(body)})`);
}

