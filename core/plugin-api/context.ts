/**
 * The per-request context: one instance per HTTP request, every field set in the constructor so
 * that all contexts share one hidden class. Plugins keep their per-request state in typed slots
 * (`defineSlot`), never in closures.
 */
import { randomBytes } from 'node:crypto';
import type { HttpRequest, HttpResponse } from '../http/types.ts';
import type { Logger } from 'pino';
import { GatewayError, type AuthChallenge } from '../base/errors.ts';
import { sendError, type ErrorTarget } from '../http/error-response.ts';
import type { ClientEnvelope } from '../protocol/era.ts';
import type { JsonRpcId, JsonRpcMessage } from '../protocol/jsonrpc.ts';
import type { RouteMetrics } from '../observe/metrics.ts';
import type { ClientAddresses } from '../http/client-address.ts';
import { RequestHead } from '../http/request-head.ts';
import type { RequestRecord } from '../observe/request-record.ts';

/** Who is calling, as established by the authenticate phase. */
export class Principal {
  readonly subject: string;
  readonly issuer: string | null;
  readonly claims: Readonly<Record<string, unknown>>;
  /** The raw bearer token: a private field, so it never appears in a log line or a JSON dump. */
  readonly #token: string | null;
  #key: string | null = null;

  constructor(subject: string, claims: Readonly<Record<string, unknown>>, token: string | null, issuer: string | null = null) {
    this.subject = subject;
    this.claims = claims;
    this.issuer = issuer;
    this.#token = token;
  }

  /**
   * Issuer and subject as one string, made once per Principal: what keys per-principal state
   * (its hash is computed once and kept with the string, not per request).
   */
  get key(): string {
    return (this.#key ??= `${this.issuer ?? ''}\0${this.subject}`);
  }

  /** The bearer token the client presented (for RFC 8693 token exchange). */
  get token(): string | null {
    return this.#token;
  }

  toJSON(): object {
    return { subject: this.subject, issuer: this.issuer };
  }
}

export interface Cancellable {
  cancel(): void;
}

export interface Slot<T> {
  readonly index: number;
  readonly name: string;
  /** Phantom field carrying the slot's value type. */
  readonly type?: T;
}

let slotCount = 0;

/** Declares a typed per-request slot. Call at module load, never per request. */
export function defineSlot<T>(name: string): Slot<T> {
  return { index: slotCount++, name };
}

const EMPTY_SLOTS: unknown[] = [];

// Request ids: a random per-process prefix and a counter; unique across replicas, no crypto per request.
// Six base-36 characters (31 bits), a dash and the counter in base 36: twelve characters until the
// 60,466,176th request. V8 makes a join of 13 characters or more a rope, which every head that
// carries the id (toward the backend, toward the client) then walks to check and compare it.
const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';
const PREFIX = Array.from(randomBytes(6), (byte) => ALPHABET[byte % 36]).join('') + '-';
let sequence = 0;
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

function requestIdOf(given: string | undefined): string {
  if (given !== undefined && SAFE_REQUEST_ID.test(given)) return given;
  return PREFIX + (++sequence).toString(36);
}

/** What every request of one server shares: its logger, its auth challenge, who its trusted proxies are. */
export interface RequestScope {
  readonly log: Logger;
  challenge: AuthChallenge | null;
  /** Absent: the socket's address is the client's. */
  readonly clientAddresses?: ClientAddresses;
  /** `server.accessLog`: the endpoints then note what the access log names (ctx.target) even where no hook needs it. */
  readonly accessLog?: boolean;
}

/** The backend a message goes to, and that backend's own name for what the message is about. */
export interface MessageTarget {
  /** `metadata.name` of the backend's MCPServer. */
  readonly backend: string;
  /**
   * The backend's name of the tool or prompt (which the client may know under a prefixed or
   * overridden name), or the resource URI; null for a message about none (tasks, completions of
   * a resource template).
   */
  readonly name: string | null;
}

export class Context implements ErrorTarget {
  readonly requestId: string;
  readonly req: HttpRequest;
  /** The headers the core reads, from one pass over rawHeaders. */
  readonly head: RequestHead;
  readonly res: HttpResponse;
  readonly startedAt: number;
  readonly path: string;
  /** The raw query string without `?`, or '' when there is none. */
  readonly query: string;
  /** Label for metrics and logs: the route pattern, never the raw path. */
  route: string;
  /** Metrics of the matched route, recorded when the response is done. */
  routeMetrics: RouteMetrics | null;
  /** Path parameters of a plugin route. */
  params: Record<string, string> | null;
  principal: Principal | null;
  readonly scope: RequestScope;
  /** True on the MCP endpoint: errors are answered as JSON-RPC errors where they have a JSON-RPC code. */
  mcp: boolean;
  /** The parsed JSON-RPC body of a POST to the MCP endpoint. */
  message: JsonRpcMessage | JsonRpcMessage[] | null;
  /** The raw body bytes; null after a plugin replaced the message (then it is serialised again). */
  body: Buffer | null;
  /** Id of the single JSON-RPC request being answered (null for notifications, responses, batches). */
  rpcId: JsonRpcId;
  /** Method of the single JSON-RPC request or notification (null for responses and batches). */
  rpcMethod: string | null;
  /**
   * Where the MCP endpoint sends the request, for plugins that want the backend's view: set
   * before the onMessage hooks run (again after a hook replaced the message) for a message the
   * gateway routes to one backend, null for one it answers or sends to every backend.
   */
  target: MessageTarget | null;
  /** The browser origin to echo in CORS headers (checked by the origin guard), or null. */
  corsOrigin: string | null;
  /**
   * A modern (2026-07-28) request's envelope from its `_meta`: the client's capabilities, identity
   * and log level; null for a legacy request (its session holds them).
   */
  envelope: ClientEnvelope | null;
  /**
   * Where the envelope member of `body` begins when the request was read by its known tail
   * (envelope-tails.ts: the body up to there, closed with `}}`, is the request without it); -1
   * otherwise. Meaningful while `body` is the client's.
   */
  envelopeAt: number;
  /**
   * The envelope's client capabilities as JSON.stringify writes them, when the request was read by
   * its known tail (written once for the tail: the implicit session's id is derived from them);
   * null otherwise. True of the message as the client sent it, before any hook changed it.
   */
  capabilitiesJson: string | null;
  /** The backend exchange in flight, cancelled if the client goes away first. */
  inflight: Cancellable | null;
  /** The MCP session this request counts against (`server.maxSessionRequests`) until it ends, or null. */
  countedSession: string | null;
  /** Whose requests of that session it counts among (Principal.key, '' anonymous): kept, should a hook change ctx.principal. */
  countedPrincipal: string;
  /** What the observation seam is told of this request (observe/channels.ts), or null when nobody listens. */
  record: RequestRecord | null;
  /** The error the gateway answered with (the last one logged), for the seam's outcome; null when none. */
  failure: GatewayError | null;
  readonly #slots: unknown[];

  constructor(req: HttpRequest, res: HttpResponse, scope: RequestScope, now: number) {
    this.req = req;
    this.head = new RequestHead(req.rawHeaders);
    this.requestId = requestIdOf(this.head.requestId);
    this.res = res;
    this.startedAt = now;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    this.path = q === -1 ? url : url.slice(0, q);
    this.query = q === -1 ? '' : url.slice(q + 1);
    this.route = '';
    this.routeMetrics = null;
    this.params = null;
    this.principal = null;
    this.scope = scope;
    this.mcp = false;
    this.message = null;
    this.body = null;
    this.rpcId = null;
    this.rpcMethod = null;
    this.target = null;
    this.corsOrigin = null;
    this.envelope = null;
    this.envelopeAt = -1;
    this.capabilitiesJson = null;
    this.inflight = null;
    this.countedSession = null;
    this.countedPrincipal = '';
    this.record = null;
    this.failure = null;
    this.#slots = slotCount === 0 ? EMPTY_SLOTS : new Array(slotCount);
  }

  get challenge(): AuthChallenge | null {
    return this.scope.challenge;
  }

  /** The client's address: the socket's, or behind a trusted proxy the one its X-Forwarded-For names (computed per call). */
  get clientAddress(): string {
    const socket = this.req.socket.remoteAddress;
    const resolver = this.scope.clientAddresses;
    return resolver === undefined ? (socket ?? 'unknown') : resolver.of(socket, this.header('x-forwarded-for'));
  }

  get bodyUnread(): boolean {
    return this.head.hasBody && !this.req.complete;
  }

  /** Answers the request with `error` (the one HTTP mapping) and logs it. */
  fail(error: unknown): void {
    this.log(sendError(this, error), error);
  }

  /**
   * Logs a failure with its private detail: server-side failures at error level, the client's
   * own mistakes at debug (they are answered, and would flood the log under attack).
   */
  log(sent: GatewayError, original: unknown = sent): void {
    this.failure = sent;
    const log = this.scope.log;
    if (sent.status >= 500) {
      const err = original instanceof GatewayError ? undefined : original;
      log.error({ requestId: this.requestId, code: sent.code, detail: sent.detail, err, path: this.path }, sent.description);
    } else if (log.isLevelEnabled('debug')) {
      log.debug({ requestId: this.requestId, code: sent.code, detail: sent.detail, path: this.path }, sent.description);
    }
  }

  get<T>(slot: Slot<T>): T | undefined {
    return this.#slots[slot.index] as T | undefined;
  }

  set<T>(slot: Slot<T>, value: T): void {
    this.#slots[slot.index] = value;
  }

  /** A plugin that rewrites the request message calls this; the body is serialised again before forwarding. */
  replaceMessage(message: JsonRpcMessage | JsonRpcMessage[]): void {
    this.message = message;
    this.body = null;
  }

  /** One request header as a string (the first, if it was repeated), or undefined. */
  header(name: string): string | undefined {
    const headers = this.req.headers;
    // Own properties only: node:http's headers object inherits from Object.prototype.
    const value = Object.hasOwn(headers, name) ? headers[name] : undefined;
    return Array.isArray(value) ? value[0] : value;
  }
}
