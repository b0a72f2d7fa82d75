/**
 * The access log (`server.accessLog: true`): one `request` line per HTTP request when its
 * response is done, written by a subscriber of the request seam (`gatehouse:request:end`). On
 * the MCP endpoint it also says what the request was about: the JSON-RPC method, the tool,
 * prompt or resource the client named, the backend it went to, and the session's tag. Never the
 * session id itself: with the owner's token it is the session's credential, so logs carry its
 * digest (sessionTag), enough to follow one session's lines.
 *
 * Subscribed only when the access log is on; with it off the request pays nothing for it.
 */
import type { Logger } from 'pino';
import { requestEnd } from '../observe/channels.ts';
import type { RequestRecord } from '../observe/request-record.ts';

export interface AccessLogLine {
  requestId: string;
  /** The HTTP method. */
  method: string | undefined;
  /** The route pattern (`mcp`, `builtin`, a plugin's path), never the raw path. */
  route: string;
  /** The JSON-RPC method, or `batch` for a batch. */
  rpc?: string;
  /** What the client named, under the key of its kind. Not `name`: pino's own field. */
  tool?: string;
  prompt?: string;
  resource?: string;
  /** The backend's `metadata.name`, when the gateway sent the request to one backend. */
  backend?: string;
  session?: string;
  /** The HTTP status sent, 499 when the client went away before any answer. */
  status: number;
  ms: number;
  /** The request's trace id, when tracing is on (spec.config.telemetry). */
  traceId?: string;
}

export function accessLogLine(record: RequestRecord): AccessLogLine {
  // Keys in reading order: what was asked, where it went, how it ended.
  const line = { requestId: record.requestId, method: record.method, route: record.route } as AccessLogLine;
  if (record.rpcMethod !== null) line.rpc = record.rpcMethod;
  if (record.subjectKind !== null) line[record.subjectKind] = record.subjectName!;
  if (record.backend !== null) line.backend = record.backend;
  if (record.sessionTag !== null) line.session = record.sessionTag;
  line.status = record.status;
  line.ms = Math.round(record.seconds * 1e4) / 10;
  if (record.traceId !== null) line.traceId = record.traceId;
  return line;
}

/** Writes the access log of the requests `server` ends to `log`, until the returned function is called. */
export function writeAccessLog(server: object, log: Logger): () => void {
  const onEnd = (message: unknown): void => {
    const record = message as RequestRecord;
    if (record.server === server) log.info(accessLogLine(record), 'request');
  };
  requestEnd.subscribe(onEnd);
  return () => {
    requestEnd.unsubscribe(onEnd);
  };
}
