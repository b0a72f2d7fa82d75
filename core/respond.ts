/**
 * Writing what a hook or handler answered: a `Reply` as is, anything else through the one error
 * mapping (errors.ts). Every answer the gateway itself gives goes through here, and neither
 * function throws: a writer that refuses what it is given (a header value with CR, LF or NUL, a
 * connection already gone) ends in the plain 500 or a cut connection, never in an exception
 * that would escape into a socket callback or an unhandled rejection.
 */
import type { Context } from './context.ts';
import { CORS_EXPOSED, lastResort } from './errors.ts';
import { Reply } from './reply.ts';

export function writeReply(ctx: Context, reply: Reply): void {
  const res = ctx.res;
  try {
    const headers: Record<string, string | number> = { ...reply.headers, 'x-request-id': ctx.requestId };
    if (ctx.corsOrigin !== null) {
      headers['access-control-allow-origin'] = ctx.corsOrigin;
      headers['access-control-expose-headers'] = CORS_EXPOSED;
      headers.vary = 'origin';
    }
    // Answered before its body was read: the rest of the body is not waited for.
    if (ctx.bodyUnread) headers.connection = 'close';
    if (reply.body === null) {
      res.writeHead(reply.status, headers);
      res.end();
      return;
    }
    headers['content-length'] = Buffer.byteLength(reply.body);
    res.writeHead(reply.status, headers);
    res.end(reply.body);
  } catch (err) {
    ctx.log(lastResort(res, err), err);
  }
}

/** Answers with `outcome` when there is one (undefined: the handler already answered). */
export function respond(ctx: Context, outcome: unknown): void {
  if (outcome === undefined) return;
  if (outcome instanceof Reply) writeReply(ctx, outcome);
  else ctx.fail(outcome);
}
