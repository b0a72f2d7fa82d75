/**
 * The access log (`server.accessLog: true`): one `request` line per HTTP request when its
 * response is done. On the MCP endpoint it also says what the request was about: the JSON-RPC
 * method, the tool, prompt or resource the client named, the backend it went to, and the
 * session's tag. Never the session id itself: with the owner's token it is the session's
 * credential, so logs carry its digest (sessionTag), enough to follow one session's lines.
 *
 * Built only when the access log is on; with it off the server reads one boolean per request.
 */
import type { Context } from '../plugin-api/context.ts';
import { subjectOf } from '../protocol/methods.ts';
import { sessionTag } from '../observe/log.ts';

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
}

export function accessLogLine(ctx: Context, status: number, seconds: number): AccessLogLine {
  // Keys in reading order: what was asked, where it went, how it ended.
  const line = { requestId: ctx.requestId, method: ctx.req.method, route: ctx.route } as AccessLogLine;
  if (ctx.mcp) {
    const message = ctx.message;
    if (Array.isArray(message)) line.rpc = 'batch';
    else if (message !== null && 'method' in message) {
      line.rpc = message.method;
      const subject = subjectOf(message);
      if (subject !== null) line[subject.kind] = subject.name;
    }
    if (ctx.target !== null) line.backend = ctx.target.backend;
    const session = ctx.head.sessionId;
    if (session !== undefined) line.session = sessionTag(session);
  }
  line.status = status;
  line.ms = Math.round(seconds * 1e4) / 10;
  return line;
}
