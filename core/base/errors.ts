/**
 * One error hierarchy for everything Gatehouse answers with, and the one base class of the
 * reasons it cannot start. The one place that writes an error as an HTTP response is
 * http/error-response.ts (`sendError`); this file knows no HTTP beyond status numbers.
 *
 * An expected failure (401, 403, 404, 413, a bad JSON-RPC body, a backend that is down) is a
 * `GatewayError`: a stable `code`, an HTTP `status`, a public `description` that the client
 * sees, and a private `detail` that only the log sees. They are thrown or returned on the hot
 * path, so constructing one captures no stack trace.
 *
 * Anything that is not a GatewayError becomes a generic 500 with no internals in the body.
 */
/** The stable codes of the core. Plugins may add their own (any string) with an explicit status. */
export type CoreErrorCode =
  | 'invalid_request'
  | 'invalid_token'
  | 'insufficient_scope'
  | 'insufficient_permissions'
  | 'forbidden'
  | 'forbidden_origin'
  | 'forbidden_host'
  | 'not_found'
  | 'method_not_allowed'
  | 'not_acceptable'
  | 'request_timeout'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'parse_error'
  | 'invalid_jsonrpc'
  | 'header_mismatch'
  | 'unsupported_protocol_version'
  | 'invalid_params'
  | 'method_not_found'
  | 'session_required'
  | 'session_not_found'
  | 'backend_unavailable'
  | 'backend_timeout'
  | 'backend_error'
  | 'stream_limit'
  | 'loop_detected'
  | 'too_many_requests'
  | 'rate_limited'
  | 'not_ready'
  | 'shutting_down'
  | 'internal_error';

interface Kind {
  status: number;
  /** JSON-RPC error code used when the failure happens inside an MCP exchange. */
  rpc: number | null;
}

/**
 * Status and JSON-RPC code of every core error code. JSON-RPC codes: -32700/-32600/-32602/-32603
 * from JSON-RPC 2.0; -32001 "session not found" as the MCP SDKs answer it; -32020 HeaderMismatch
 * and -32022 UnsupportedProtocolVersion from 2026-07-28; -32000 for transport-level refusals.
 */
const KINDS: Record<CoreErrorCode, Kind> = {
  invalid_request: { status: 400, rpc: null },
  invalid_token: { status: 401, rpc: null },
  insufficient_scope: { status: 403, rpc: null },
  insufficient_permissions: { status: 403, rpc: null },
  forbidden: { status: 403, rpc: null },
  forbidden_origin: { status: 403, rpc: -32000 },
  forbidden_host: { status: 403, rpc: -32000 },
  not_found: { status: 404, rpc: null },
  method_not_allowed: { status: 405, rpc: -32000 },
  not_acceptable: { status: 406, rpc: -32000 },
  request_timeout: { status: 408, rpc: -32000 },
  payload_too_large: { status: 413, rpc: -32600 },
  unsupported_media_type: { status: 415, rpc: -32000 },
  parse_error: { status: 400, rpc: -32700 },
  invalid_jsonrpc: { status: 400, rpc: -32600 },
  header_mismatch: { status: 400, rpc: -32020 },
  // 2026-07-28: an unknown or unserved version (data lists the supported ones), a request without
  // its required _meta fields, a method the server does not implement (404 over HTTP).
  unsupported_protocol_version: { status: 400, rpc: -32022 },
  invalid_params: { status: 400, rpc: -32602 },
  method_not_found: { status: 404, rpc: -32601 },
  session_required: { status: 400, rpc: -32000 },
  session_not_found: { status: 404, rpc: -32001 },
  backend_unavailable: { status: 502, rpc: -32603 },
  backend_timeout: { status: 504, rpc: -32603 },
  backend_error: { status: 502, rpc: -32603 },
  // The gateway's own limit on GET streams to a backend, not a failure of the backend.
  stream_limit: { status: 503, rpc: -32000 },
  // A request that came back to the gateway through a backend URL (http/hop-mark.ts): RFC 5842's Loop Detected.
  loop_detected: { status: 508, rpc: -32000 },
  // A limit of the client's own (server.maxSessionRequests): it may retry once a request ends.
  too_many_requests: { status: 429, rpc: -32000 },
  // spec.config.rateLimiting: ToolHive's JSON-RPC code 429 (outside the reserved range, so valid in
  // every MCP revision), with retryAfterSeconds in error.data.
  rate_limited: { status: 429, rpc: 429 },
  not_ready: { status: 503, rpc: -32603 },
  shutting_down: { status: 503, rpc: -32603 },
  internal_error: { status: 500, rpc: -32603 },
};

export interface GatewayErrorOptions {
  /** Private: logged, never sent. */
  detail?: string;
  /** Required for codes the core does not know. */
  status?: number;
  /** JSON-RPC error code for failures inside an MCP exchange (overrides the default of the code). */
  rpcCode?: number;
  /** Extra response headers (for example `Allow` on a 405). */
  headers?: Record<string, string>;
  /** Extra public fields of the JSON body (never secrets). */
  extra?: Record<string, unknown>;
  cause?: unknown;
}

export class GatewayError extends Error {
  readonly code: string;
  readonly status: number;
  readonly description: string;
  readonly detail: string | undefined;
  readonly rpcCode: number | null;
  readonly headers: Record<string, string> | undefined;
  readonly extra: Record<string, unknown> | undefined;

  constructor(code: CoreErrorCode, description: string, options?: GatewayErrorOptions);
  constructor(code: string, description: string, options: GatewayErrorOptions & { status: number });
  constructor(code: string, description: string, options?: GatewayErrorOptions) {
    // Expected failures are part of normal traffic: no stack capture.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(description, options?.cause === undefined ? undefined : { cause: options.cause });
    Error.stackTraceLimit = limit;
    const kind = (KINDS as Record<string, Kind | undefined>)[code];
    this.name = 'GatewayError';
    this.code = code;
    this.status = options?.status ?? kind?.status ?? 500;
    this.description = description;
    this.detail = options?.detail;
    this.rpcCode = options?.rpcCode ?? kind?.rpc ?? null;
    this.headers = options?.headers;
    this.extra = options?.extra;
  }
}

/**
 * A plugin family's error catalogue: each of its codes with its status, in one table. Returns the
 * one way to make its errors, so that a code is never written with a status at the place of use.
 */
export function errorCatalogue<Code extends string>(statuses: Readonly<Record<Code, number>>) {
  return (code: Code, description: string, options: Omit<GatewayErrorOptions, 'status'> = {}): GatewayError =>
    new GatewayError(code, description, { ...options, status: statuses[code] });
}

/** RFC 6750 / RFC 9728 challenge parameters, set by the incoming-auth plugin at start. */
export interface AuthChallenge {
  realm: string;
  /** URL of the RFC 9728 protected resource metadata document. */
  resourceMetadata: string;
  /** Scopes to advertise in the challenge (`scope=`), when configured. */
  scopes: readonly string[];
}

/**
 * A value the client or a backend chose, for a public error description: JSON-quoted, cut to
 * `max` characters, anything but printable ASCII escaped. Descriptions travel in headers too.
 */
export function untrusted(value: string, max = 64): string {
  const cut = value.length > max ? value.slice(0, max) + '…' : value;
  return JSON.stringify(cut).replace(/[^\x20-\x7e]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

/**
 * The JSON-RPC error response of `err` to request `id` (an error without a JSON-RPC code of its
 * own is an internal error): what an MCP client gets, as an object, for hooks to see.
 */
export function rpcErrorResponse(err: GatewayError, id: string | number | null): { jsonrpc: '2.0'; id: string | number | null; error: { code: number; message: string; data: Record<string, unknown> } } {
  return { jsonrpc: '2.0', id, error: { code: err.rpcCode ?? -32603, message: err.description, data: { error: err.code, ...err.extra } } };
}

/** The JSON body for an error: JSON-RPC error object inside an MCP exchange, else `{error, error_description}`. */
export function errorBody(err: GatewayError, target: { readonly mcp: boolean; readonly rpcId: string | number | null }): string {
  if (target.mcp && err.rpcCode !== null) return JSON.stringify(rpcErrorResponse(err, target.rpcId));
  return JSON.stringify({ error: err.code, error_description: err.description, ...err.extra });
}

/**
 * A reason the gateway or the registry cannot start: a configuration problem, a plugin's config,
 * a part this build cannot serve, a credential file that is missing. Each problem is one line of
 * `message`; the command line prints them and exits 1, without a stack trace. Thrown at start,
 * never on the request path (that is GatewayError).
 */
export class StartupError extends Error {
  /** `problems`: one line each. */
  constructor(problems: readonly string[] | string, options?: ErrorOptions) {
    super(typeof problems === 'string' ? problems : problems.join('\n'), options);
    this.name = new.target.name;
  }
}

/** A part of the config that validates but that this build cannot serve yet, each with its YAML path. */
export class NotAvailableError extends StartupError {}
