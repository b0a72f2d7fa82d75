/**
 * The one place that maps an error to an HTTP response (`sendError`), and what is written when
 * even that fails (`lastResort`): the status, the JSON or JSON-RPC body, CORS, the Bearer
 * challenge of a 401, and whether the connection must close.
 */
import { Buffer } from 'node:buffer';
import { errorBody, GatewayError, type AuthChallenge } from '../base/errors.ts';
import { addCorsHeaders } from './cors.ts';
import type { HttpResponse } from './types.ts';

/** What the mapper needs to know about the request that failed. */
export interface ErrorTarget {
  readonly res: HttpResponse;
  readonly requestId: string;
  /** True when the request is an MCP JSON-RPC exchange: errors with an rpc code get a JSON-RPC body. */
  readonly mcp: boolean;
  /** The id of the JSON-RPC request being answered, when one was parsed. */
  readonly rpcId: string | number | null;
  readonly challenge: AuthChallenge | null;
  /** The browser origin allowed by the origin guard, echoed in CORS headers; null for none. */
  readonly corsOrigin: string | null;
  /** The request has a body not (yet) read: an answer now must close the connection. */
  readonly bodyUnread: boolean;
}

const INTERNAL = new GatewayError('internal_error', 'internal error');

/** Anything but printable ASCII: control characters (CR, LF, NUL, ...), DEL and non-ASCII. */
const NOT_PRINTABLE_ASCII = /[^\x20-\x7e]/g;

/**
 * Quote a value for an HTTP auth-param (RFC 9110 quoted-string, with RFC 6750's printable-ASCII
 * charset). The values are partly the client's own (an error description may quote a token
 * header): every other character becomes `?`, so nothing can end the header line, and nothing
 * outside latin1 can turn into CR or LF when the head is encoded.
 */
function quote(value: string): string {
  return '"' + value.replace(NOT_PRINTABLE_ASCII, '?').replace(/[\\"]/g, '\\$&') + '"';
}

/** The `WWW-Authenticate: Bearer ...` value for a 401, or a 403 `insufficient_scope`. */
function bearerChallenge(challenge: AuthChallenge, err: GatewayError | null): string {
  let value = 'Bearer realm=' + quote(challenge.realm) + ', resource_metadata=' + quote(challenge.resourceMetadata);
  if (challenge.scopes.length > 0) value += ', scope=' + quote(challenge.scopes.join(' '));
  if (err !== null) value += ', error=' + quote(err.code) + ', error_description=' + quote(err.description);
  return value;
}

/**
 * The one mapping from an error to an HTTP response. Returns the GatewayError that was sent
 * (the internal one for unexpected errors) so the caller can log it with its detail.
 *
 * It never throws: every request path ends here, so a response writer that refuses a header
 * (or a connection already gone) must not take the process down. Such a refusal is answered
 * with the plain 500, or the connection is cut when even that cannot be written.
 */
export function sendError(target: ErrorTarget, error: unknown): GatewayError {
  const err = error instanceof GatewayError ? error : INTERNAL;
  const res = target.res;
  try {
    if (res.headersSent) {
      // Too late for a status line: cut the stream so the client sees a failure, not a truncated success.
      res.destroy();
      return err;
    }
    writeError(target, err);
    return err;
  } catch (writeFailure) {
    return lastResort(res, writeFailure);
  }
}

/** When writing an answer failed: the plain 500 if nothing was sent yet, else a cut connection. */
export function lastResort(res: HttpResponse, cause: unknown): GatewayError {
  const failed = new GatewayError('internal_error', 'internal error', { detail: `writing the response failed: ${String((cause as Error)?.message ?? cause)}`, cause });
  try {
    if (res.headersSent || res.writableEnded) res.destroy();
    else {
      const body = errorBody(INTERNAL, { mcp: false, rpcId: null });
      res.writeHead(500, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store', connection: 'close' });
      res.end(body);
    }
  } catch {
    try {
      res.destroy();
    } catch {
      // Nothing is left to tell.
    }
  }
  return failed;
}

function writeError(target: ErrorTarget, err: GatewayError): void {
  const res = target.res;
  const body = errorBody(err, target);
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'x-request-id': target.requestId,
  };
  if (err.headers !== undefined) Object.assign(headers, err.headers);
  addCorsHeaders(headers, target.corsOrigin);
  if (target.challenge !== null && (err.status === 401 || err.code === 'insufficient_scope')) {
    headers['www-authenticate'] = bearerChallenge(target.challenge, err);
  }
  // After a 413 or a 408, or any answer given before the body was read, the rest of the body is
  // not read: the connection closes rather than drain it (or wait for it).
  if (err.status === 413 || err.status === 408 || target.bodyUnread) headers.connection = 'close';
  res.writeHead(err.status, headers);
  res.end(body);
}
