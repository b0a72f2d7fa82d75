/**
 * The 2026-07-28 standard headers: `Mcp-Method`, and `Mcp-Name` mirroring the subject a request
 * names (methods.ts says which methods have one). The gateway checks a client's against the body
 * (a gateway that routed or authorised on the header while the backend ran the body would be
 * split), and writes them on a request for a modern backend, values made header-safe.
 */
import { Buffer } from 'node:buffer';
import { GatewayError } from '../base/errors.ts';
import { isResponse, type JsonRpcMessage } from './jsonrpc.ts';
import { mcpNameOf } from './methods.ts';

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
    const bodyName = mcpNameOf(message);
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

const HEADER_TOKEN = /^[\x21-\x7e]{1,256}$/;

/**
 * The standard headers of a modern request: `Mcp-Method` (when the method is a header-safe
 * token: no other method is one a backend serves), and `Mcp-Name` where the body names something.
 */
export function standardHeaders(message: JsonRpcMessage): string[] {
  if (!('method' in message) || !HEADER_TOKEN.test(message.method)) return [];
  const name = mcpNameOf(message);
  return name === undefined ? ['mcp-method', message.method] : ['mcp-method', message.method, 'mcp-name', encodeHeaderValue(name)];
}
