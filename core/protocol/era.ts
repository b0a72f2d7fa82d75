/**
 * The two generations of MCP the gateway speaks, on both of its sides:
 *
 *  - legacy (2025-03-26 … 2025-11-25): `initialize` opens a session (`Mcp-Session-Id`), the
 *    client's capabilities and identity are the session's, servers push requests to the client;
 *  - modern (2026-07-28): stateless; every request carries the protocol version, the client's
 *    capabilities and identity in `params._meta`, and `Mcp-Method` / `Mcp-Name` headers that
 *    mirror the body; servers ask the client for input by answering `input_required`.
 *
 * A client's era is decided per request; a backend's once per probe (profiles.ts). A message
 * crossing from one era to the other is rewritten here: the modern envelope added for a modern
 * backend (from the client's own `_meta`, or from its legacy session), or taken away for a
 * legacy one.
 */
import type { JsonRpcMessage, JsonRpcNotification, JsonRpcRequest } from './jsonrpc.ts';

export type Era = 'modern' | 'legacy';

/** The version Gatehouse names itself with (serverInfo, clientInfo). */
export const GATEHOUSE_VERSION = '0.1.0';

/**
 * The clientInfo a legacy backend gets for a modern client that named itself nowhere (2026-07-28
 * makes it optional; a 2025 `initialize` requires it).
 */
export const UNNAMED_CLIENT = { name: 'unnamed-client', version: '0' } as const;

/** Modern revisions the gateway speaks, newest first. */
export const MODERN_VERSIONS: readonly string[] = ['2026-07-28'];
/** Legacy revisions the gateway speaks (with an `initialize` handshake), newest first. */
export const LEGACY_VERSIONS: readonly string[] = ['2025-11-25', '2025-06-18', '2025-03-26'];
/** Every revision, newest first: what `server/discover` and -32022 errors list. */
export const SUPPORTED_VERSIONS: readonly string[] = [...MODERN_VERSIONS, ...LEGACY_VERSIONS];

/** The `_meta` keys MCP reserves for the per-request protocol fields. */
export const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  logLevel: 'io.modelcontextprotocol/logLevel',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
} as const;

/** The per-request fields a modern request carries and a legacy one does not. */
export const ENVELOPE_KEYS: readonly string[] = [META.protocolVersion, META.clientCapabilities, META.clientInfo, META.logLevel];

export function isModernVersion(version: string | undefined): boolean {
  return version !== undefined && MODERN_VERSIONS.includes(version);
}

/**
 * What a client declares about itself, which a modern backend wants on every request: from the
 * request's own `_meta` (a modern client), or from its session's `initialize` (a legacy one).
 */
export interface ClientEnvelope {
  readonly capabilities: Readonly<Record<string, unknown>>;
  readonly clientInfo: unknown;
  /** The minimum log level asked for (`logging/setLevel` of a legacy session), or null: no logs. */
  readonly logLevel: string | null;
}

function metaOf(message: JsonRpcRequest | JsonRpcNotification): Record<string, unknown> | undefined {
  const meta = message.params?.['_meta'];
  return typeof meta === 'object' && meta !== null && !Array.isArray(meta) ? (meta as Record<string, unknown>) : undefined;
}

/**
 * `message` as a modern backend at `version` gets it: `_meta` carries `envelope` (the request's
 * own, checked, for a modern client; its session's for a legacy one, whose request may not speak
 * for itself there) with the protocol version the backend speaks, and the request's other keys
 * (such as `progressToken`). Responses pass unchanged.
 */
export function towardModern(message: JsonRpcMessage, envelope: ClientEnvelope, version: string): JsonRpcMessage {
  if (!('method' in message)) return message;
  const given = metaOf(message);
  const meta: Record<string, unknown> = {};
  for (const key in given) if (!ENVELOPE_KEYS.includes(key)) meta[key] = given[key];
  meta[META.protocolVersion] = version;
  meta[META.clientCapabilities] = envelope.capabilities;
  if (envelope.clientInfo !== null && envelope.clientInfo !== undefined) meta[META.clientInfo] = envelope.clientInfo;
  if (envelope.logLevel !== null) meta[META.logLevel] = envelope.logLevel;
  return { ...message, params: { ...message.params, _meta: meta } };
}

/**
 * `message` as a legacy backend gets it: the modern envelope, which means nothing there, taken
 * out of `_meta` (the request's other keys stay). A message without one passes unchanged.
 */
export function towardLegacy(message: JsonRpcMessage): JsonRpcMessage {
  if (!('method' in message)) return message;
  const given = metaOf(message);
  if (given === undefined || !(META.protocolVersion in given || META.clientCapabilities in given)) return message;
  // Built key by key rather than copied and deleted from: an object that lost keys is slow to serialize.
  let meta: Record<string, unknown> | null = null;
  for (const key in given) {
    if (!ENVELOPE_KEYS.includes(key)) (meta ??= {})[key] = given[key];
  }
  const params: Record<string, unknown> = {};
  for (const key in message.params) if (key !== '_meta') params[key] = message.params[key];
  if (meta !== null) params['_meta'] = meta;
  return { jsonrpc: message.jsonrpc, ...('id' in message ? { id: message.id } : {}), method: message.method, params } as JsonRpcMessage;
}

/** MCP's log levels (RFC 5424), least severe first. */
export const MCP_LOG_LEVELS: readonly string[] = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

/**
 * Whether a modern client that asked for `wanted` (its request's `logLevel`, null: none) gets a
 * log message at `level`: 2026-07-28 sends none to a request that asked for none. A legacy
 * backend logs by its session's level, so the gateway filters for the modern client.
 */
export function logWanted(wanted: string | null, level: unknown): boolean {
  if (wanted === null) return false;
  const floor = MCP_LOG_LEVELS.indexOf(wanted);
  const at = typeof level === 'string' ? MCP_LOG_LEVELS.indexOf(level) : -1;
  return floor === -1 || at === -1 || at >= floor;
}

