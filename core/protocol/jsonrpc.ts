/**
 * JSON-RPC 2.0 framing for MCP: the message types, parsing a request body into messages with a
 * clear error for each way it can be wrong, and the 2026-07-28 standard headers check
 * (`Mcp-Method` / `Mcp-Name` must agree with the body they describe).
 */
import { GatewayError } from '../base/errors.ts';

export type JsonRpcId = string | number | null;

/**
 * An id as JSON writes it. A number is written as String writes it (the same digits for every
 * finite number, and an id read from JSON is finite), without JSON.stringify's call into the
 * runtime (~600 instructions for `1`, on every aggregated answer).
 */
export function idJson(id: JsonRpcId): string {
  return typeof id === 'number' ? String(id) : JSON.stringify(id);
}

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: string | number;
  method: string;
  params?: Record<string, unknown>;
}

export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: Record<string, unknown>;
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export interface JsonRpcResponse {
  jsonrpc: '2.0';
  id: JsonRpcId;
  result?: unknown;
  error?: JsonRpcErrorObject;
}

export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

export function isRequest(msg: JsonRpcMessage): msg is JsonRpcRequest {
  return 'method' in msg && 'id' in msg;
}

export function isNotification(msg: JsonRpcMessage): msg is JsonRpcNotification {
  return 'method' in msg && !('id' in msg);
}

export function isResponse(msg: JsonRpcMessage): msg is JsonRpcResponse {
  return !('method' in msg);
}

function invalid(description: string): GatewayError {
  return new GatewayError('invalid_jsonrpc', 'Invalid Request: ' + description);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isValidId(id: unknown): id is string | number {
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id));
}

/** Validates one parsed value as a JSON-RPC message; returns the problem, or null when valid. */
export function messageProblem(value: unknown): string | null {
  if (!isPlainObject(value)) return 'a JSON-RPC message must be an object';
  if (value.jsonrpc !== '2.0') return 'jsonrpc must be "2.0"';
  if ('method' in value) {
    if (typeof value.method !== 'string' || value.method.length === 0) return 'method must be a non-empty string';
    if ('id' in value && !isValidId(value.id)) return 'id must be a string or a number (MCP forbids null ids)';
    if ('params' in value && value.params !== undefined && !isPlainObject(value.params)) return 'params must be an object';
    return null;
  }
  if (!('id' in value) || (value.id !== null && !isValidId(value.id))) return 'a response needs an id';
  const hasResult = 'result' in value;
  const hasError = 'error' in value;
  if (hasResult === hasError) return 'a message needs a method, or exactly one of result and error';
  if (hasError) {
    const error = value.error;
    if (!isPlainObject(error) || !Number.isInteger(error.code) || typeof error.message !== 'string') {
      return 'error must be an object with an integer code and a string message';
    }
  }
  return null;
}

/** One message from its text (an event's data, a body): null when it is not JSON, or not JSON-RPC. */
export function parseMessage(text: string): JsonRpcMessage | null {
  try {
    const value = JSON.parse(text) as unknown;
    return messageProblem(value) === null ? (value as JsonRpcMessage) : null;
  } catch {
    return null;
  }
}

/**
 * How deep a request's JSON may nest (arrays and objects). JSON.parse reads any depth, but the
 * gateway writes messages anew (aggregated mode, the era bridge, hooks) and walks parts of them
 * (the implicit session's key), and JSON.stringify runs out of stack a few thousand levels down:
 * a deeper request is refused here, before anything reads it. MCP messages nest a few levels.
 */
export const MAX_NESTING = 256;

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Whether `body` opens more than `limit` arrays or objects inside one another (strings skipped).
 * A body too short to hold that much nesting is not scanned.
 */
export function nestsDeeperThan(body: Buffer, limit: number): boolean {
  if (body.length <= 2 * limit) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return false;
}

/**
 * Parses a request body into one message or a batch. Throws `parse_error` for bytes that are not
 * JSON and `invalid_jsonrpc` for JSON that is not JSON-RPC (or nested deeper than MAX_NESTING),
 * naming the problem.
 */
export function parseMessages(body: Buffer): JsonRpcMessage | JsonRpcMessage[] {
  if (nestsDeeperThan(body, MAX_NESTING)) throw invalid(`the body nests arrays and objects more than ${MAX_NESTING} levels deep`);
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new GatewayError('parse_error', 'Parse error: the body is not valid JSON', { detail: (err as Error).message });
  }
  if (Array.isArray(value)) {
    if (value.length === 0) throw invalid('an empty batch');
    for (let i = 0; i < value.length; i++) {
      const problem = messageProblem(value[i]);
      if (problem !== null) throw invalid(`batch element ${i}: ${problem}`);
    }
    return value as JsonRpcMessage[];
  }
  const problem = messageProblem(value);
  if (problem !== null) throw invalid(problem);
  return value as JsonRpcMessage;
}

/**
 * `table[key]` for a key a client or a backend chose (a method name, say): only the table's own
 * entries, never what every object inherits (`constructor`, `__proto__`, `toString`...).
 */
export function ownEntry<T>(table: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}
