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

/** The caller as the seam names it: subject, issuer, and the OAuth client (`client_id`, else `azp`). */
export function observedPrincipal(principal: Context['principal']): ObservedPrincipal | null {
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

/** The names of the JSON-RPC codes the gateway answers with itself, for a record's errorCode when the answer names none. */
const RPC_CODE_NAMES: Readonly<Record<number, string>> = { [-32700]: 'parse_error', [-32600]: 'invalid_jsonrpc', [-32601]: 'method_not_found', [-32602]: 'invalid_params', [-32603]: 'internal_error', [-32002]: 'resource_not_found', 429: 'rate_limited' };

/**
 * Notes a JSON-RPC error the gateway answered in an aggregated session (an unknown tool, a rate
 * limit, a backend that could not be reached) on the request's record, when it has one: such an
 * answer is no failure of the HTTP request (ctx.failure), but the seam's subscribers (the audit
 * trail, the metrics that name a tool only when it was not refused) must know it was one.
 */
export function noteRpcError(ctx: Context, code: number, data: Readonly<Record<string, unknown>> | undefined): void {
  const record = ctx.record;
  if (record === null) return;
  record.rpcErrorCode = code;
  record.errorCode = typeof data?.['error'] === 'string' ? data['error'] : (RPC_CODE_NAMES[code] ?? 'rpc_error');
}

/** Notes that the item a call named exists but the caller's policy hides it: refused (`forbidden`), though the client heard "unknown". */
export function noteConcealed(ctx: Context): void {
  if (ctx.record !== null) ctx.record.errorCode = 'forbidden';
}

/** Fills in how the request ended and publishes `gatehouse:request:end`. */
export function endObservedRequest(record: RequestRecord, ctx: Context, status: number, seconds: number): void {
  record.route = ctx.route;
  record.routeLabel = ctx.routeMetrics?.name ?? '';
  record.status = status;
  record.seconds = seconds;
  record.principal = observedPrincipal(ctx.principal);
  if (ctx.mcp) noteMcp(record, ctx);
  const failure = ctx.failure;
  if (failure !== null) {
    record.errorCode = failure.code;
    if (ctx.mcp) record.rpcErrorCode = failure.rpcCode;
  }
  record.outcome = status === 499 ? 'aborted' : failure !== null || status >= 500 ? 'error' : 'ok';
  if (requestEnd.hasSubscribers) requestEnd.publish(record);
}
