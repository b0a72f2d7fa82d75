/**
 * The server's side of the request seam (observe/channels.ts): the record of a request is
 * built when it is taken, if anyone listens, and filled in from its Context when its response is
 * done. The request's start is published with `runStores`, so that a subscriber that scoped the
 * requests (observe/request-scope.ts) finds the record wherever the request's work runs.
 */
import type { Context } from '../plugin-api/context.ts';
import { requestEnd, requestObserved, requestStart } from '../observe/channels.ts';
import { RequestRecord, type ObservedPrincipal } from '../observe/request-record.ts';
import { subjectOf } from '../protocol/methods.ts';

/**
 * Runs `serve(ctx)` as the request's work: published on `gatehouse:request:start` first when
 * anyone listens (the record then goes on ctx.record), else called as it is.
 */
export function observedRequest<T>(server: object, ctx: Context, serve: (this: T, ctx: Context) => void, self: T): void {
  if (!requestObserved()) {
    serve.call(self, ctx);
    return;
  }
  const record = new RequestRecord(server, ctx.requestId, ctx.req.method ?? '', ctx.path, ctx.startedAt, ctx);
  ctx.record = record;
  requestStart.runStores(record, serve, self, ctx);
}

function principalOf(ctx: Context): ObservedPrincipal | null {
  const principal = ctx.principal;
  if (principal === null) return null;
  const claims = principal.claims;
  const client = typeof claims['client_id'] === 'string' ? claims['client_id'] : typeof claims['azp'] === 'string' ? claims['azp'] : null;
  return { subject: principal.subject, issuer: principal.issuer, clientId: client };
}

/** What the MCP endpoint knows of the request: method, subject, backend, session, protocol version. */
function noteMcp(record: RequestRecord, ctx: Context): void {
  const message = ctx.message;
  if (Array.isArray(message)) record.rpcMethod = 'batch';
  else if (message !== null && 'method' in message) {
    record.rpcMethod = message.method;
    record.rpcId = ctx.rpcId;
    const subject = subjectOf(message);
    if (subject !== null) {
      record.subjectKind = subject.kind;
      record.subjectName = subject.name;
    }
  }
  if (ctx.target !== null) record.backend = ctx.target.backend;
  const session = ctx.head.sessionId;
  if (session !== undefined) record.noteSession(session);
  record.protocolVersion = record.header('mcp-protocol-version') ?? null;
}

/** Fills in how the request ended and publishes `gatehouse:request:end`. */
export function endObservedRequest(record: RequestRecord, ctx: Context, status: number, seconds: number): void {
  record.route = ctx.route;
  record.routeLabel = ctx.routeMetrics?.name ?? '';
  record.status = status;
  record.seconds = seconds;
  record.principal = principalOf(ctx);
  if (ctx.mcp) noteMcp(record, ctx);
  const failure = ctx.failure;
  if (failure !== null) {
    record.errorCode = failure.code;
    if (ctx.mcp) record.rpcErrorCode = failure.rpcCode;
  }
  record.outcome = status === 499 ? 'aborted' : failure !== null || status >= 500 ? 'error' : 'ok';
  if (requestEnd.hasSubscribers) requestEnd.publish(record);
}
