/**
 * What an aggregated endpoint's answers to a modern (2026-07-28) client carry that a legacy
 * client's do not: every result a `resultType` ("complete" unless a backend asked for input),
 * cacheable results (`server/discover`, the lists) a `ttlMs` and a `cacheScope`, and the
 * gateway's own `serverInfo` in `_meta`. Methods of the legacy era only are not found.
 */
import { GATEHOUSE_VERSION, META, SUPPORTED_VERSIONS } from '../../protocol/era.ts';
import type { JsonRpcResponse } from '../../protocol/jsonrpc.ts';
import type { BackendLink } from './backend-link.ts';
import type { AggregatedSession } from './session.ts';
import { mergeCapabilities, mergeInstructions } from './initialize-answer.ts';

export function serverInfo(name: string): Record<string, unknown> {
  return { name, version: GATEHOUSE_VERSION, title: `${name} (Gatehouse virtual MCP server)` };
}

/** `response` as a modern client gets it: a result without `resultType` is a complete one. */
export function completed(response: JsonRpcResponse): JsonRpcResponse {
  const result = response.result;
  if (typeof result !== 'object' || result === null || 'resultType' in result) return response;
  return { ...response, result: { ...result, resultType: 'complete' } };
}

/** The same, changing `response` itself: for one the gateway parsed and nobody else holds. */
export function completeOwned(response: JsonRpcResponse): JsonRpcResponse {
  const result = response.result;
  if (typeof result === 'object' && result !== null && !('resultType' in result)) (result as Record<string, unknown>)['resultType'] = 'complete';
  return response;
}

/**
 * The response with a `cacheScope: public` result made private: what one caller gets through
 * plugin views (per-user policy) is not for a cache shared with others, whose views may hide it.
 */
export function privately(response: JsonRpcResponse): JsonRpcResponse {
  const result = response.result as Record<string, unknown> | undefined;
  if (typeof result !== 'object' || result === null || result['cacheScope'] !== 'public') return response;
  return { ...response, result: { ...result, cacheScope: 'private' } };
}

/** The cache hints of a result: how long it stays fresh (ms, never negative), and who may share it. */
export interface CacheHints {
  readonly ttlMs: number;
  readonly cacheScope: 'public' | 'private';
}

/** Appends `resultType`, the cache hints and `_meta` to the JSON text of a result object. */
export function withCacheHints(resultText: string, hints: CacheHints, meta: string): string {
  const close = resultText.lastIndexOf('}');
  const inner = resultText.slice(0, close).trimEnd();
  const separator = inner.endsWith('{') ? '' : ',';
  return `${inner}${separator}"resultType":"complete","ttlMs":${Math.max(0, Math.floor(hints.ttlMs))},"cacheScope":"${hints.cacheScope}","_meta":${meta}}`;
}

/**
 * The gateway's answer to `server/discover`: every version it speaks, the capabilities of the
 * session's backends merged as for `initialize`, its instructions, its identity.
 */
export function discoverResult(session: AggregatedSession, name: string, links: readonly BackendLink[], hints: CacheHints, knows: (backend: string) => boolean): Record<string, unknown> {
  const initialized = session.initializeCapabilities;
  const records = [...session.backends.values()];
  const missing = session.record.missing;
  // Made anew for this caller (the session may have been opened by the same principal with another
  // key: a token with other claims), from what its initialize saw when this process opened it.
  const parts = session.instructionParts ?? {
    joined: links.filter((l) => session.backends.has(l.name)).map((l) => ({ name: l.name, instructions: undefined })),
    missing: missing.map((m) => ({ name: m, reason: 'unavailable' })),
  };
  return {
    resultType: 'complete',
    supportedVersions: SUPPORTED_VERSIONS,
    capabilities: initialized ?? mergeCapabilities(records.map((r) => r.capabilities), missing.length > 0),
    instructions: mergeInstructions(
      name,
      parts.joined.filter((j) => knows(j.name)),
      parts.missing.filter((m) => knows(m.name)),
    ),
    ttlMs: hints.ttlMs,
    cacheScope: hints.cacheScope,
    _meta: { [META.serverInfo]: serverInfo(name) },
  };
}
