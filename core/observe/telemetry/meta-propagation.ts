/**
 * The trace context of a backend call inside its JSON-RPC request, in `params._meta` under the
 * keys `traceparent` and `tracestate` (MCP, SEP-414; the OpenTelemetry MCP conventions), for the
 * protocol generations that carry it there (2026-07-28). The body is parsed and written again
 * only while tracing is on, and only up to a size: a bigger one keeps its bytes (the headers
 * still carry the context).
 */
import { Buffer } from 'node:buffer';

/** Bodies above this are not rewritten: the cost of parsing them is not worth a `_meta` key. */
const MAX_REWRITTEN = 1024 * 1024;
/** Bodies above this are not parsed only to name a span (the method is then the HTTP one). */
const MAX_NAMED = 64 * 1024;

/** What the tracer reads of a backend request's body: its JSON-RPC method, and the message when it may carry `_meta`. */
export interface BackendMessage {
  readonly method: string | null;
  readonly message: Record<string, unknown> | null;
}

const NONE: BackendMessage = { method: null, message: null };

/**
 * The single JSON-RPC request or notification in `body`, or NONE (a batch, a response, not JSON,
 * too big: 1 MiB when its `_meta` is to carry the context, `forMeta`, else 64 KiB).
 */
export function backendMessage(body: Buffer | null, forMeta: boolean): BackendMessage {
  if (body === null || body.length > (forMeta ? MAX_REWRITTEN : MAX_NAMED)) return NONE;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return NONE;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return NONE;
  const message = parsed as Record<string, unknown>;
  return typeof message['method'] === 'string' ? { method: message['method'], message } : NONE;
}

/** `message` with `params._meta.traceparent` (and `tracestate`) set, serialised; the client's own values are replaced. */
export function withTraceMeta(message: Record<string, unknown>, traceparent: string, tracestate: string | null): Buffer {
  const params = message['params'];
  const base = params !== null && typeof params === 'object' && !Array.isArray(params) ? (params as Record<string, unknown>) : {};
  const meta = base['_meta'];
  const nextMeta: Record<string, unknown> = meta !== null && typeof meta === 'object' && !Array.isArray(meta) ? { ...(meta as Record<string, unknown>) } : {};
  nextMeta['traceparent'] = traceparent;
  if (tracestate !== null) nextMeta['tracestate'] = tracestate;
  else delete nextMeta['tracestate'];
  return Buffer.from(JSON.stringify({ ...message, params: { ...base, _meta: nextMeta } }));
}
