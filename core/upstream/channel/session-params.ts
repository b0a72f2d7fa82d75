/**
 * What a channel backend's session keeps of its client's `initialize`: the parameters a new
 * channel's handshake sends again (protocolVersion, capabilities, clientInfo), bounded, so that
 * 10,000 sessions never hold 10,000 request bodies; and what a shared channel is initialized with
 * (the gateway's own parameters: no session's capabilities stand for the others').
 */
import { Buffer } from 'node:buffer';
import { GATEHOUSE_VERSION, LEGACY_VERSIONS } from '../../protocol/era.ts';

/** The most a session's kept parameters may take, serialized. */
export const MAX_SESSION_PARAMS_BYTES = 16 * 1024;

/** A shared channel's handshake: the gateway itself, declaring no client capability (sampling, elicitation and roots need a channel per session). */
export const SHARED_PARAMS = Object.freeze({
  protocolVersion: LEGACY_VERSIONS[0]!,
  capabilities: {},
  clientInfo: { name: 'gatehouse', version: GATEHOUSE_VERSION },
});

/** The parameters a session keeps, or why they are refused. */
export function sessionParams(params: unknown): { readonly params: Record<string, unknown> } | { readonly problem: string } {
  const given = typeof params === 'object' && params !== null && !Array.isArray(params) ? (params as Record<string, unknown>) : {};
  const kept: Record<string, unknown> = {};
  for (const name of ['protocolVersion', 'capabilities', 'clientInfo'] as const) if (given[name] !== undefined) kept[name] = given[name];
  const bytes = Buffer.byteLength(JSON.stringify(kept));
  if (bytes > MAX_SESSION_PARAMS_BYTES) return { problem: `initialize params (protocolVersion, capabilities, clientInfo) of ${bytes} bytes: at most ${MAX_SESSION_PARAMS_BYTES} are kept for a session` };
  return { params: kept };
}

/**
 * A shared channel's initialize result as one session is told it: the version the session asked
 * for when it is one the gateway knows and no newer than the channel's, else the channel's (the
 * client then decides, as with any server).
 */
export function resultFor(result: unknown, asked: unknown): unknown {
  if (typeof result !== 'object' || result === null) return result;
  const negotiated = (result as { protocolVersion?: unknown }).protocolVersion;
  if (typeof asked !== 'string' || typeof negotiated !== 'string' || asked === negotiated) return result;
  if (!LEGACY_VERSIONS.includes(asked) || asked > negotiated) return result;
  return { ...result, protocolVersion: asked };
}
