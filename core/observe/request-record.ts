/**
 * What the seam says about one HTTP request (channels.ts `gatehouse:request:start` and `:end`):
 * one object per request, published on both channels. At start it knows the request's head;
 * `end` fills in who asked, what about, where it went and how it ended.
 *
 * Never the session id itself, nor a token: with the owner's token a session id is the session's
 * credential, so the record carries its digest (`sessionTag`), as the access log does.
 */
import { performance } from 'node:perf_hooks';
import { isHeaderNamed } from '../base/header-list.ts';
import { sessionTag } from './log.ts';

/** The caller, as the authenticate phase established it. */
export interface ObservedPrincipal {
  readonly subject: string;
  readonly issuer: string | null;
  /** The OAuth client the token was issued to (`client_id`, else `azp`), when the token says. */
  readonly clientId: string | null;
}

/** One plugin hook's run: which plugin, which phase, when, how long, whether it refused or threw. */
export interface PhaseTiming {
  readonly plugin: string;
  /** `authenticate`, `authorize`, `onMessage`, `prepareBackend` or `onResponse`. */
  readonly phase: string;
  /** `performance.now()` when it started. */
  readonly startedAt: number;
  readonly seconds: number;
  /** It answered in place of the gateway (a refusal, an error) or threw. */
  readonly failed: boolean;
}

/** What the record reads from the request lazily, only when a subscriber asks (the server's Context). */
export interface RequestSource {
  readonly clientAddress: string;
  readonly req: { readonly rawHeaders: readonly string[] };
  /** The parsed JSON-RPC body, once read (null before, and for a request without one). */
  readonly message: unknown;
}

/** How a request ended: answered (any status), answered with an error of the gateway's, or the client left first. */
export type RequestOutcome = 'ok' | 'error' | 'aborted';

export class RequestRecord {
  /** The server that took it: several servers (a gateway and a registry) may share one process. */
  readonly server: object;
  readonly requestId: string;
  /** The HTTP method. */
  readonly method: string;
  /** The path, without the query: what the client asked for (the route pattern is `route`). */
  readonly path: string;
  /** `performance.now()` when the request was taken. */
  readonly startedAt: number;
  /** The same instant, in milliseconds since the epoch. */
  readonly startTime: number;
  readonly #source: RequestSource;

  // ---- Filled in at the end ----
  /** The route pattern (`mcp`, `builtin`, a plugin's path, `not_found`), never the raw path; '' when none was matched. */
  route = '';
  /** The route's label in the metrics (`builtin` for the probes and admin documents); '' when none was matched. */
  routeLabel = '';
  status = 0;
  /** From the request's start to its response's end. */
  seconds = 0;
  outcome: RequestOutcome = 'ok';
  principal: ObservedPrincipal | null = null;
  /** The JSON-RPC method, `batch` for a batch; null off the MCP endpoint or for a response. */
  rpcMethod: string | null = null;
  /** The JSON-RPC id of the single request answered. */
  rpcId: string | number | null = null;
  /** The kind and name of what the client named: a tool, a prompt, a resource (its URI). */
  subjectKind: 'tool' | 'prompt' | 'resource' | null = null;
  subjectName: string | null = null;
  /** The backend's `metadata.name`, when the request went to one backend. */
  backend: string | null = null;
  #sessionId: string | null = null;
  #sessionTag: string | null = null;
  /** The MCP protocol version the request said (`MCP-Protocol-Version`). */
  protocolVersion: string | null = null;
  /** The gateway's error code when it answered with an error (`invalid_token`, `backend_timeout`, ...). */
  errorCode: string | null = null;
  /** That error's JSON-RPC code, when it was answered as a JSON-RPC error. */
  rpcErrorCode: number | null = null;
  /**
   * The W3C trace id of the request, set by the tracer (telemetry/) when tracing is on: the one
   * its backends were given, sampled or not. The tracer subscribes before the server listens, so
   * the end's other subscribers (the access log, a plugin) see it.
   */
  traceId: string | null = null;
  /** Each plugin hook the request went through, in order. */
  readonly phases: PhaseTiming[] = [];

  constructor(server: object, requestId: string, method: string, path: string, startedAt: number, source: RequestSource) {
    this.server = server;
    this.requestId = requestId;
    this.method = method;
    this.path = path;
    this.startedAt = startedAt;
    this.startTime = performance.timeOrigin + startedAt;
    this.#source = source;
  }

  /** The client's address (behind `server.trustedProxies`, the one they name), computed when asked. */
  get clientAddress(): string {
    return this.#source.clientAddress;
  }

  /** The first value of a request header (`name` in lower case), or undefined. */
  header(name: string): string | undefined {
    const raw = this.#source.req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      if (isHeaderNamed(raw[i]!, name)) return raw[i + 1];
    }
    return undefined;
  }

  /** The MCP session's digest (log.ts `sessionTag`), when the request named a session: computed when first read (a hash is not free). */
  get sessionTag(): string | null {
    if (this.#sessionTag === null && this.#sessionId !== null) this.#sessionTag = sessionTag(this.#sessionId);
    return this.#sessionTag;
  }

  /** Notes the session the request named (request-observation.ts, at the end): kept private, only its digest is told. */
  noteSession(id: string): void {
    this.#sessionId = id;
  }

  /** A string of the single JSON-RPC request's `params._meta` (`traceparent`, say), once the body is read. */
  meta(key: string): string | undefined {
    const message = this.#source.message as { params?: { _meta?: Record<string, unknown> } } | null;
    if (message === null || typeof message !== 'object' || Array.isArray(message)) return undefined;
    const meta = message.params?._meta;
    if (meta === null || typeof meta !== 'object') return undefined;
    const value = Object.hasOwn(meta, key) ? meta[key] : undefined;
    return typeof value === 'string' ? value : undefined;
  }

  /** A parameter of the single JSON-RPC request (`arguments` of a tool call), once the body is read: for an audit that records it. */
  rpcParam(key: string): unknown {
    const message = this.#source.message as { params?: Record<string, unknown> } | null;
    if (message === null || typeof message !== 'object' || Array.isArray(message)) return undefined;
    const params = message.params;
    if (params === null || typeof params !== 'object' || !Object.hasOwn(params, key)) return undefined;
    return params[key];
  }

  /** Notes one hook's run (chain.ts, for each hook while the request is observed). */
  phase(plugin: string, phase: string, startedAt: number, seconds: number, failed: boolean): void {
    this.phases.push({ plugin, phase, startedAt, seconds, failed });
  }
}
