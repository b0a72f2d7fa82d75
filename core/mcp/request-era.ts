/**
 * Which generation of MCP a POST speaks (the era is decided per request), and, for a modern one,
 * the envelope it carries, checked as 2026-07-28 requires of a server that reads the body:
 *
 *   _meta protocolVersion present   → modern: the MCP-Protocol-Version header must be there and
 *                                      equal it (else -32020), it must be a modern version the
 *                                      gateway speaks (else -32022 listing the supported ones),
 *                                      clientCapabilities must be an object (else -32602), and
 *                                      Mcp-Method (and Mcp-Name where the body names something)
 *                                      must be there (-32020; their agreement with the body is
 *                                      checked for every request, intake.ts).
 *   absent, `initialize`             → legacy: the handshake of a session.
 *   absent, a modern header          → -32602: a modern request without its envelope.
 *   absent, a header the gateway does not speak at all, no session → -32022, so that a dual-era
 *                                      client falls back for the right reason.
 *   anything else                    → legacy (a session's request, a response, a batch).
 * Every error is HTTP 400 and names the problem.
 */
import { GatewayError, untrusted } from '../base/errors.ts';
import type { RequestHead } from '../http/request-head.ts';
import { isModernVersion, META, SUPPORTED_VERSIONS, type ClientEnvelope } from '../protocol/era.ts';
import type { JsonRpcMessage } from '../protocol/jsonrpc.ts';
import { mcpMethod } from '../protocol/methods.ts';


function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function unsupportedVersion(requested: string): GatewayError {
  return new GatewayError('unsupported_protocol_version', `Unsupported protocol version: ${untrusted(requested)}`, {
    extra: { supported: SUPPORTED_VERSIONS, requested: requested.slice(0, 64) },
  });
}

/** The envelope of a modern request (null for a legacy one); throws the GatewayError of a malformed one. */
export function modernEnvelope(head: RequestHead, message: JsonRpcMessage | JsonRpcMessage[]): ClientEnvelope | null {
  if (Array.isArray(message) || !('method' in message)) return null;
  const meta = message.params?.['_meta'];
  const version = isObject(meta) ? meta[META.protocolVersion] : undefined;
  const header = head.protocolVersion;
  if (version === undefined) {
    if (message.method === 'initialize' || header === undefined) return null;
    if (isModernVersion(header)) {
      throw new GatewayError('invalid_params', `Invalid params: a ${untrusted(header)} request carries its protocol version in _meta["${META.protocolVersion}"]`);
    }
    if (!SUPPORTED_VERSIONS.includes(header) && head.sessionId === undefined) throw unsupportedVersion(header);
    return null;
  }
  if (typeof version !== 'string') throw new GatewayError('invalid_params', `Invalid params: _meta["${META.protocolVersion}"] must be a string`);
  if (header === undefined) throw new GatewayError('header_mismatch', 'Header mismatch: the MCP-Protocol-Version header is required');
  if (header !== version) {
    throw new GatewayError('header_mismatch', `Header mismatch: MCP-Protocol-Version header ${untrusted(header)} does not match ${untrusted(version)} in _meta`);
  }
  if (!isModernVersion(version)) throw unsupportedVersion(version);
  const capabilities = (meta as Record<string, unknown>)[META.clientCapabilities];
  if (!isObject(capabilities)) throw new GatewayError('invalid_params', `Invalid params: _meta["${META.clientCapabilities}"] is required and must be an object`);
  if (head.mcpMethod === undefined) throw new GatewayError('header_mismatch', 'Header mismatch: the Mcp-Method header is required');
  if (head.mcpName === undefined && mcpMethod(message.method)?.mcpName === 'required') throw new GatewayError('header_mismatch', `Header mismatch: the Mcp-Name header is required for ${message.method}`);
  const level = (meta as Record<string, unknown>)[META.logLevel];
  return { capabilities, clientInfo: (meta as Record<string, unknown>)[META.clientInfo] ?? null, logLevel: typeof level === 'string' ? level : null };
}
