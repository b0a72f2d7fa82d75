/**
 * What a reload may change, and what it changed.
 *
 * Reloaded (a new generation, virtual-mcp-server.ts): the backends (added, removed, URL, transport
 * (its kind; a stdio server's command, arguments, environment, working directory and the bounds
 * of its processes), timeouts, answer size bound, outgoing auth, annotations, the claims of their items, the addresses a registry's
 * server may be reached at), incoming auth (including its resourceUrl, hence the MCP path, and
 * its authzConfig: the policies as read again, so a changed policy file or ConfigMap counts), aggregation, failure handling,
 * rate limits (the buckets are the process's and keep their tokens: a changed bucket goes on from
 * what it holds, capped at its new maxTokens), passthroughHeaders, the
 * token-exchange cache, the plugins and their config, server.maxBodyBytes, and the registry that
 * feeds the group (fed-group.ts: a new generation when a registry starts or stops feeding it,
 * since a fed group is always aggregated; else only its feed starts anew).
 *
 * Needs a restart (a reload that changes any of it is refused as a whole, nothing applied):
 *  - metadata.name: it names the Redis connection and the server in every session;
 *  - spec.server (but maxBodyBytes): the listener (engine, admin listener, timeouts, allowed
 *    hosts and origins, trusted proxies, access log); host and port are command-line flags;
 *  - spec.config.session: the session store is created once and shared by every generation;
 *  - spec.config.telemetry: the tracer and its exporter are started once, with the server;
 *  - spec.config.audit: the audit trail and its output likewise;
 *  - spec.authServerConfig added, removed or changed, and with it the incomingAuth fields it is
 *    built from (resourceUrl, scopes): the embedded authorization server may keep its clients,
 *    codes and tokens in its plugin, which a reload carries over as it is (keptAcrossReloads),
 *    so it can only carry over the same server.
 */
import { isDeepStrictEqual } from 'node:util';
import type { BackendConfig, VmcpConfig } from '../config/vmcp-types.ts';

export interface RestartNeeded {
  /** YAML path of what changed, e.g. `VirtualMCPServer/x spec.server`. */
  readonly path: string;
  readonly reason: string;
}

export interface Changes {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  readonly changed: readonly string[];
  readonly incomingAuth: boolean;
  readonly outgoingAuth: boolean;
  readonly plugins: boolean;
  /** Other reloadable sections that changed (aggregation, failureHandling, ...). */
  readonly other: readonly string[];
}

function withoutBodyLimit(server: VmcpConfig['server']): unknown {
  const { maxBodyBytes: _, ...rest } = server;
  return rest;
}

/** Every part of `next` that differs from `current` and needs a restart; empty: the reload may go on. */
export function restartNeeded(current: VmcpConfig, next: VmcpConfig): RestartNeeded[] {
  const where = `VirtualMCPServer/${next.name}`;
  const found: RestartNeeded[] = [];
  if (current.name !== next.name) found.push({ path: `${where} metadata.name`, reason: `the name changed from "${current.name}" (it names the session store's connection and the server in every session)` });
  if (!isDeepStrictEqual(withoutBodyLimit(current.server), withoutBodyLimit(next.server))) {
    found.push({ path: `${where} spec.server`, reason: 'the listener settings changed (only maxBodyBytes reloads)' });
  }
  if (!isDeepStrictEqual(current.session, next.session)) found.push({ path: `${where} spec.config.session`, reason: 'the session store is created once and shared by every reload' });
  if (!isDeepStrictEqual(current.telemetry, next.telemetry)) found.push({ path: `${where} spec.config.telemetry`, reason: 'the tracer and its exporter are started once, with the server' });
  if (!isDeepStrictEqual(current.audit, next.audit)) found.push({ path: `${where} spec.config.audit`, reason: 'the audit trail and its output are started once, with the server' });
  if (!isDeepStrictEqual(current.authServer, next.authServer)) {
    found.push({ path: `${where} spec.authServerConfig`, reason: 'the embedded authorization server changed: it keeps its clients, codes and tokens, and a reload carries over only the same server' });
  } else if (next.authServer !== null && !isDeepStrictEqual(authServerInputs(current), authServerInputs(next))) {
    found.push({ path: `${where} spec.incomingAuth`, reason: 'resourceUrl or scopes changed, which the embedded authorization server is built from' });
  }
  return found;
}

/** The parts of incomingAuth the embedded authorization server is built from. */
function authServerInputs(config: VmcpConfig): unknown {
  const incoming = config.incomingAuth;
  return { resourceUrl: incoming.resourceUrl, scopes: incoming.type === 'oidc' ? incoming.scopes : null };
}

function backendKey(backend: BackendConfig): unknown {
  return { url: backend.url, transport: backend.transport, timeoutMs: backend.timeoutMs, answerTimeoutMs: backend.answerTimeoutMs, maxResponseBytes: backend.maxResponseBytes, externalAuth: backend.externalAuth, annotations: backend.annotations, authzClaims: backend.authzClaims, endpointPolicy: backend.endpointPolicy };
}

export function changesOf(current: VmcpConfig, next: VmcpConfig): Changes {
  const before = new Map(current.backends.map((b) => [b.name, b]));
  const after = new Map(next.backends.map((b) => [b.name, b]));
  const added = [...after.keys()].filter((name) => !before.has(name));
  const removed = [...before.keys()].filter((name) => !after.has(name));
  const changed = [...after.keys()].filter((name) => before.has(name) && !isDeepStrictEqual(backendKey(before.get(name)!), backendKey(after.get(name)!)));
  const outgoingAuth =
    current.outgoingAuthSource !== next.outgoingAuthSource ||
    [...after.keys()].some((name) => before.has(name) && !isDeepStrictEqual(before.get(name)!.externalAuth, after.get(name)!.externalAuth));
  const other: string[] = [];
  if (!isDeepStrictEqual(current.aggregation, next.aggregation)) other.push('aggregation');
  if (!isDeepStrictEqual(current.authz, next.authz)) other.push('incomingAuth.authzConfig');
  if (!isDeepStrictEqual(current.passthroughHeaders, next.passthroughHeaders)) other.push('passthroughHeaders');
  if (!isDeepStrictEqual(current.failureHandling, next.failureHandling)) other.push('failureHandling');
  if (!isDeepStrictEqual(current.rateLimiting, next.rateLimiting)) other.push('rateLimiting');
  if (!isDeepStrictEqual(current.tokenExchangeCache, next.tokenExchangeCache)) other.push('tokenExchangeCache');
  if (current.server.maxBodyBytes !== next.server.maxBodyBytes) other.push('server.maxBodyBytes');
  if ((current.registry === null) !== (next.registry === null)) other.push('registry');
  if (!isDeepStrictEqual(current.backends.map((b) => b.name), next.backends.map((b) => b.name)) && added.length === 0 && removed.length === 0) other.push('backend order');
  return {
    added,
    removed,
    changed,
    incomingAuth: !isDeepStrictEqual(current.incomingAuth, next.incomingAuth),
    outgoingAuth,
    plugins: !isDeepStrictEqual(current.plugins, next.plugins),
    other,
  };
}

export function nothingChanged(changes: Changes): boolean {
  return changes.added.length + changes.removed.length + changes.changed.length + changes.other.length === 0 && !changes.incomingAuth && !changes.outgoingAuth && !changes.plugins;
}

/** "backends added: a, b; removed: c; auth: incoming; plugins". */
export function describe(changes: Changes): string {
  const parts: string[] = [];
  if (changes.added.length > 0) parts.push(`backends added: ${changes.added.join(', ')}`);
  if (changes.removed.length > 0) parts.push(`backends removed: ${changes.removed.join(', ')}`);
  if (changes.changed.length > 0) parts.push(`backends changed: ${changes.changed.join(', ')}`);
  const auth = [changes.incomingAuth ? 'incoming' : null, changes.outgoingAuth ? 'outgoing' : null].filter((a) => a !== null);
  if (auth.length > 0) parts.push(`auth changed: ${auth.join(', ')}`);
  if (changes.plugins) parts.push('plugins changed');
  if (changes.other.length > 0) parts.push(`changed: ${changes.other.join(', ')}`);
  return parts.join('; ');
}
