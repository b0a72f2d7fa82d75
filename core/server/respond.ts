/**
 * Writing what a hook or handler answered: a `Reply` as is, anything else through the one error
 * mapping (http/error-response.ts). Every answer the gateway itself gives goes through here, and neither
 * function throws: a writer that refuses what it is given (a header value with CR, LF or NUL, a
 * connection already gone) ends in the plain 500 or a cut connection, never in an exception
 * that would escape into a socket callback or an unhandled rejection.
 */
import { Buffer } from 'node:buffer';
import type { Context } from '../plugin-api/context.ts';
import { lastResort } from '../http/error-response.ts';
import { addCorsHeaders } from '../http/cors.ts';
import { Reply } from '../plugin-api/reply.ts';
import { isPromise } from '../base/thenable.ts';

export function writeReply(ctx: Context, reply: Reply): void {
  const res = ctx.res;
  try {
    const headers: Record<string, string | number> = { ...reply.headers, 'x-request-id': ctx.requestId };
    addCorsHeaders(headers, ctx.corsOrigin);
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

/** The same, now or once `outcome` settles; a rejection is answered as the error it is. */
export function respondWhenSettled(ctx: Context, outcome: unknown): void {
  if (isPromise(outcome)) outcome.then((settled) => respond(ctx, settled), (err: unknown) => ctx.fail(err));
  else respond(ctx, outcome);
}
