/**
 * One audit record as a JSON line: built from a request's record (the seam's `RequestRecord`) or
 * from an operation a plugin published (`OperationEvent`). The fields the access log has too
 * keep its names (`requestId`, `method`, `rpc`, `tool`/`prompt`/`resource`, `backend`,
 * `session`, `status`, `ms`, `traceId`); the rest: `time`, `type` (ToolHive's event types),
 * `outcome` (ToolHive's outcomes), `component`, the principal (`sub`, `iss`, `clientId`),
 * `clientAddress`, `errorCode`, `rpcErrorCode`.
 *
 * Never a token, a code, a secret or a session id (the session is its digest, as in the access
 * log). What a client chose (a tool's name, a URI, a subject) is cut to MAX_TEXT characters; the
 * line is JSON, so a CR, LF or NUL in it is escaped and cannot start a record of its own.
 */
import { Buffer } from 'node:buffer';
import type { AuditOutcome, OperationEvent } from '../operation-event.ts';
import type { RequestRecord } from '../request-record.ts';
import { mcpEventType } from './audit-events.ts';

/** The most characters of one string a record carries (a client's words are unbounded). */
export const MAX_TEXT = 512;

export type AuditLine = Record<string, string | number | boolean | null | Record<string, unknown> | unknown[]>;

/** ISO 8601 of `ms`, its second's text kept: most records of a busy second share it. */
let second = -1;
let secondText = '';
export function isoTime(ms: number): string {
  const whole = Math.floor(ms / 1000);
  if (whole !== second) {
    second = whole;
    secondText = new Date(whole * 1000).toISOString().slice(0, 20);
  }
  const milli = Math.floor(ms - whole * 1000);
  return `${secondText}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
}

export function bounded(text: string): string {
  return text.length <= MAX_TEXT ? text : `${text.slice(0, MAX_TEXT)}…`;
}

/** Codes of a refusal by a rule: authentication, the origin guard, policy, a rate limit. */
const DENIALS = new Set([
  'invalid_token', 'insufficient_scope', 'insufficient_permissions', 'forbidden', 'forbidden_origin', 'forbidden_host', 'rate_limited', 'too_many_requests', 'access_denied',
]);

/** How a request ended, in ToolHive's words. */
export function requestOutcome(record: RequestRecord): AuditOutcome {
  if (record.outcome === 'aborted') return 'failure';
  const code = record.errorCode;
  if (code === null) return record.status >= 500 ? 'error' : record.status === 401 || record.status === 403 ? 'denied' : record.status >= 400 ? 'failure' : 'success';
  if (DENIALS.has(code) || record.status === 401 || record.status === 403) return 'denied';
  if (record.status >= 500 || code.startsWith('backend_') || code === 'internal_error') return 'error';
  return 'failure';
}

/** What a request's record says, as an audit line (`type` is the caller's: it filtered on it). */
export function requestLine(record: RequestRecord, type: string, component: string): AuditLine {
  const line: AuditLine = { time: isoTime(record.startTime), type, outcome: requestOutcome(record), component, requestId: record.requestId };
  const principal = record.principal;
  if (principal !== null) {
    line.sub = bounded(principal.subject);
    if (principal.issuer !== null) line.iss = bounded(principal.issuer);
    if (principal.clientId !== null) line.clientId = bounded(principal.clientId);
  }
  line.clientAddress = record.clientAddress;
  line.method = record.method;
  if (record.route !== '') line.route = record.route;
  if (record.rpcMethod !== null) line.rpc = bounded(record.rpcMethod);
  if (record.subjectKind !== null) line[record.subjectKind] = bounded(record.subjectName!);
  if (record.backend !== null) line.backend = record.backend;
  if (record.sessionTag !== null) line.session = record.sessionTag;
  line.status = record.status;
  if (record.errorCode !== null) line.errorCode = record.errorCode;
  else if (record.outcome === 'aborted') line.errorCode = 'client_closed';
  if (record.rpcErrorCode !== null) line.rpcErrorCode = record.rpcErrorCode;
  line.ms = Math.round(record.seconds * 1e4) / 10;
  if (record.traceId !== null) line.traceId = record.traceId;
  return line;
}

/** The event type of a request of the server (null: not one an audit records). */
export function requestType(record: RequestRecord, mcpRoute: boolean): string | null {
  if (mcpRoute) return mcpEventType(record.rpcMethod, record.method);
  // Off the MCP endpoint, a refusal: who was turned away, and where (the authorization server's
  // own operations are its events, the registry's changes its own).
  return record.status === 401 || record.status === 403 ? 'http_request' : null;
}

/**
 * The call's arguments (`tools/call`, `prompts/get`), as JSON of at most `maxBytes` bytes: the
 * value when it fits, else its size alone (`argumentsBytes`), never a cut JSON text.
 */
export function addArguments(line: AuditLine, record: RequestRecord, maxBytes: number): void {
  const value = record.rpcParam('arguments');
  if (value === undefined) return;
  let text: string;
  try {
    text = JSON.stringify(value);
  } catch {
    return;
  }
  const bytes = Buffer.byteLength(text);
  if (bytes <= maxBytes) line.arguments = value as Record<string, unknown>;
  else line.argumentsBytes = bytes;
}

/** What a plugin's operation says, as an audit line. */
export function operationLine(event: OperationEvent, component: string): AuditLine {
  const line: AuditLine = { time: isoTime(event.time), type: event.type, outcome: event.outcome, component };
  if (event.requestId !== null) line.requestId = event.requestId;
  const principal = event.principal;
  if (principal !== null) {
    line.sub = bounded(principal.subject);
    if (principal.issuer !== null) line.iss = bounded(principal.issuer);
  }
  const clientId = principal?.clientId ?? event.clientId;
  if (clientId !== null) line.clientId = bounded(clientId);
  if (event.clientAddress !== null) line.clientAddress = event.clientAddress;
  for (const [key, value] of Object.entries(event.details)) if (!(key in line)) line[key] = bounded(value);
  if (event.errorCode !== null) line.errorCode = bounded(event.errorCode);
  return line;
}
