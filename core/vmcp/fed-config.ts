/**
 * The configuration a generation of a registry-fed group serves: the file's, with the registry's
 * servers after the file's MCPServers, each a backend as an MCPServer without a timeout or
 * credentials would be (RegistryFeedConfig.backend), named by fed-names.ts, and reached only at
 * the addresses `spec.registry` allows (RegistryFeedConfig.endpoints, upstream/endpoint-guard.ts).
 *
 * Claims: an entry's claims become the backend's annotation `toolhive.stacklok.dev/authz-claims`
 * (their JSON, keys sorted), the annotation an MCPServer of the file gives its claims in, which
 * a claims filter reads; an entry without claims gets none (seen by every caller, as the registry
 * serves it). `gatehouse.dev/registry-entry` names the entry, for plugins and logs.
 */
import type { BackendConfig, VmcpConfig } from '../config/vmcp-types.ts';
import { NO_ITEM_CLAIMS, STREAMABLE_HTTP } from '../plugin-api/backend.ts';
import { nameFedServers, type FedNaming, type NamedServer } from './fed-names.ts';
import type { FedServer } from './registry-entries.ts';

export const CLAIMS_ANNOTATION = 'toolhive.stacklok.dev/authz-claims';
export const ENTRY_ANNOTATION = 'gatehouse.dev/registry-entry';

/** The annotations of a registry's server: its claims (when it has any) and its entry. */
export function fedAnnotations(server: FedServer): Record<string, string> {
  const keys = Object.keys(server.claims).sort();
  const annotations: Record<string, string> = { [ENTRY_ANNOTATION]: server.entry };
  if (keys.length > 0) annotations[CLAIMS_ANNOTATION] = JSON.stringify(Object.fromEntries(keys.map((key) => [key, server.claims[key]!])));
  return annotations;
}

function toBackend(config: VmcpConfig, server: NamedServer): BackendConfig {
  const defaults = config.registry!.backend;
  return {
    name: server.name,
    url: server.url,
    // A registry's server is only ever dialled at its remote URL: it never names a command the gateway would run.
    transport: STREAMABLE_HTTP,
    timeoutMs: defaults.timeoutMs,
    answerTimeoutMs: defaults.answerTimeoutMs,
    maxResponseBytes: defaults.maxResponseBytes,
    externalAuth: null,
    annotations: fedAnnotations(server),
    // Per-item claims are the file's (aggregation.tools[].authzClaims), which names its MCPServers only.
    authzClaims: NO_ITEM_CLAIMS,
    // A publisher chose the URL: only the addresses the operator allows (public ones by default).
    endpointPolicy: config.registry!.endpoints,
  };
}

/** `config` (the file's) with `servers` (the registry's) among its backends, and the notes of their naming. */
export function withFedServers(config: VmcpConfig, servers: readonly FedServer[]): { config: VmcpConfig; naming: FedNaming } {
  if (config.registry === null || servers.length === 0) return { config, naming: { servers: [], notes: [] } };
  const naming = nameFedServers(servers, new Set(config.backends.map((b) => b.name)));
  return { config: { ...config, backends: [...config.backends, ...naming.servers.map((server) => toBackend(config, server))] }, naming };
}
