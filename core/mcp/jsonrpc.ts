/**
 * JSON-RPC 2.0 framing for MCP: the message types, parsing a request body into messages with a
 * clear error for each way it can be wrong, and the 2026-07-28 standard headers check
 * (`Mcp-Method` / `Mcp-Name` must agree with the body they describe).
 */
import { GatewayError } from '../errors.ts';

export type JsonRpcId = string | number | null;

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

/** The methods whose `Mcp-Name` header mirrors a body field, and which field. */
const NAME_FIELD: Record<string, 'name' | 'uri'> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'resources/subscribe': 'uri',
  'resources/unsubscribe': 'uri',
};

/** The body field mirrored by `Mcp-Name` for this message, or undefined. */
export function nameOf(msg: JsonRpcRequest | JsonRpcNotification): string | undefined {
  const field = ownEntry(NAME_FIELD, msg.method);
  if (field === undefined || msg.params === undefined) return undefined;
  const value = msg.params[field];
  return typeof value === 'string' ? value : undefined;
}

const SENTINEL_PREFIX = '=?base64?';
const SENTINEL_SUFFIX = '?=';

/** A header-safe value: visible ASCII, inner spaces allowed, no surrounding whitespace. */
const PLAIN_HEADER_VALUE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/**
 * `text` as an `Mcp-Name` (or `Mcp-Param-*`) value: as it is when it is header-safe ASCII, else
 * the UTF-8 bytes as `=?base64?...?=` (also when it looks like that sentinel itself), so that no
 * value can carry CR, LF or anything else onto the wire.
 */
export function encodeHeaderValue(text: string): string {
  if (PLAIN_HEADER_VALUE.test(text) && !(text.startsWith(SENTINEL_PREFIX) && text.endsWith(SENTINEL_SUFFIX))) return text;
  return `${SENTINEL_PREFIX}${Buffer.from(text, 'utf8').toString('base64')}${SENTINEL_SUFFIX}`;
}

/** Decodes an `Mcp-Name` value, which may carry non-ASCII text as `=?base64?...?=`. Null when malformed. */
export function decodeHeaderValue(value: string): string | null {
  if (!value.startsWith(SENTINEL_PREFIX) || !value.endsWith(SENTINEL_SUFFIX)) return value;
  const b64 = value.slice(SENTINEL_PREFIX.length, value.length - SENTINEL_SUFFIX.length);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) return null;
  const bytes = Buffer.from(b64, 'base64');
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  return Buffer.from(text, 'utf8').equals(bytes) ? text : null;
}

/**
 * The 2026-07-28 standard headers, when a client sends them, must describe the body: a gateway
 * that routed or authorised on the header while the backend executed the body would be split.
 * Returns the mismatch, or null. Responses and batches carry no standard headers to compare.
 */
export function standardHeadersProblem(
  message: JsonRpcMessage | JsonRpcMessage[],
  mcpMethod: string | undefined,
  mcpName: string | undefined,
): GatewayError | null {
  if (mcpMethod === undefined && mcpName === undefined) return null;
  if (Array.isArray(message) || isResponse(message)) return null;
  if (mcpMethod !== undefined && mcpMethod !== message.method) {
    return new GatewayError('header_mismatch', `Mcp-Method header "${mcpMethod}" does not match the body method "${message.method}"`);
  }
  if (mcpName !== undefined) {
    const decoded = decodeHeaderValue(mcpName);
    if (decoded === null) return new GatewayError('header_mismatch', 'Mcp-Name header is not valid =?base64?...?= text');
    const bodyName = nameOf(message);
    if (decoded !== bodyName) {
      return new GatewayError(
        'header_mismatch',
        bodyName === undefined
          ? `Mcp-Name header is set but ${message.method} has no name or uri in its params`
          : `Mcp-Name header "${decoded}" does not match "${bodyName}" in the body`,
      );
    }
  }
  return null;
}
