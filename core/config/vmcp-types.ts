/**
 * The vMCP configuration after loading and validation: what `gatehouse vmcp serve` runs on.
 * Produced by `loadVmcpConfig` (core/config/vmcp-config.ts) from a multi-document YAML of
 * Kubernetes-shaped resources. Secret references are resolved to their values here; durations
 * are milliseconds; sizes are bytes; relative paths are absolute.
 */

import type { AggregationConfig, FailureHandlingConfig, SessionConfig } from './aggregation-config.ts';
import type { BudgetBounds } from '../base/rate-limit.ts';
import type { RedisConnectionConfig } from './redis-config.ts';
import type { RateLimitConfig } from './rate-limiting.ts';
import type { AuthServerEndpointGroup } from './auth-server-limits.ts';
import type { ServerSettings } from './server-settings.ts';
import type { TelemetrySettings } from '../observe/telemetry/telemetry-settings.ts';
import type { AuditSettings } from '../observe/audit/audit-settings.ts';
import type { BackendTransportConfig, EndpointPolicy, ExternalAuthConfig, ItemClaims, ResolvedSecretRef } from '../plugin-api/backend.ts';

export type { ExternalAuthConfig, ResolvedSecretRef, TokenExchangeConfig } from '../plugin-api/backend.ts';

export interface BackendConfig {
  /** `metadata.name` of the MCPServer. */
  readonly name: string;
  /** The backend's URL; a stdio backend's is `stdio://<name>`, a key that reaches nothing. */
  readonly url: string;
  /** `spec.transport` and, for stdio, the command and how its processes are kept. */
  readonly transport: BackendTransportConfig;
  /** `spec.timeout` (Gatehouse extension): time allowed for response headers. Default 30s. */
  readonly timeoutMs: number;
  /**
   * Time allowed for the whole answer of a call the gateway makes for itself (initialize, lists,
   * discovery, fan-out): `operational.timeouts.perWorkload[name]`, else `.default`, else `timeoutMs`.
   */
  readonly answerTimeoutMs: number;
  /** `operational.maxBackendResponseSize`: the most one answer (and one event of a stream) may hold. Default 32Mi. */
  readonly maxResponseBytes: number;
  /** The outgoing-auth strategy that applies to this backend (after `outgoingAuth.source`), or null. */
  readonly externalAuth: ExternalAuthConfig | null;
  /** `metadata.annotations` of the MCPServer (none: empty), for plugins (e.g. a claims map of who may use it). */
  readonly annotations: Readonly<Record<string, string>>;
  /** `spec.config.aggregation.tools[].authzClaims` of this workload (none: empty maps), for plugins: who may see and use each item. */
  readonly authzClaims: ItemClaims;
  /** The addresses a registry's server may be reached at (RegistryFeedConfig.endpoints); null for the file's MCPServers, which the operator wrote. */
  readonly endpointPolicy: EndpointPolicy | null;
}

/**
 * `MCPGroup.spec.registry` of the served group (Gatehouse extension): the registry whose servers
 * join the group's backends (core/vmcp/registry-feed.ts).
 */
export interface RegistryFeedConfig {
  /** Where it is written, for messages: `MCPGroup/<name> spec.registry`. */
  readonly where: string;
  /** The registry server's base URL. */
  readonly url: string;
  /** The registry's name (`registries[].name`): read at `<url>/v1/registries/<name>/entries`. */
  readonly name: string;
  /** `tokenSecretRef`: sent as `Authorization: Bearer`; null: none (a registry in anonymous mode). */
  readonly token: ResolvedSecretRef | null;
  /** `syncPolicy.interval`: the wait between reads, jittered by ±10 %. */
  readonly intervalMs: number;
  /** `timeout`: one whole read (every page). */
  readonly timeoutMs: number;
  /** `maxResponseSize`: the most one page of the answer may hold. */
  readonly maxResponseBytes: number;
  /** `maxServers`: servers read at most (more fail the read). */
  readonly maxServers: number;
  /**
   * What each of its servers gets as a backend, as an MCPServer without these fields would:
   * `spec.timeout`'s default (30s), `operational.timeouts.default` (else that), and
   * `operational.maxBackendResponseSize`. No outgoing credentials (the registry's publishers
   * choose the URLs), and the file's `annotations` are the registry's (claims, entry name).
   */
  readonly backend: { readonly timeoutMs: number; readonly answerTimeoutMs: number; readonly maxResponseBytes: number };
  /**
   * `allowPrivateEndpoint` and `allowedEndpointCIDRs`: the addresses its servers may be reached at
   * (public ones, and these), checked on every address the gateway dials for them.
   */
  readonly endpoints: EndpointPolicy;
}

export interface InlineOidcConfig {
  readonly type: 'inline';
  readonly issuer: string;
  readonly clientId: string;
  readonly audience: string;
  readonly clientSecret: ResolvedSecretRef | null;
  /** Allow the issuer's JWKS / discovery to resolve to private addresses. */
  readonly jwksAllowPrivateIP: boolean;
}

export interface ClusterOidcConfig {
  readonly type: 'cluster';
  /** Default: `https://kubernetes.default.svc`. */
  readonly issuer: string;
  /** Default: `gatehouse`. */
  readonly audience: string;
}

export type IncomingAuthConfig =
  | { readonly type: 'anonymous'; readonly resourceUrl: string | null }
  | {
      readonly type: 'oidc';
      readonly resourceUrl: string;
      readonly oidc: InlineOidcConfig | ClusterOidcConfig;
      /** `incomingAuth.scopes` (Gatehouse extension): advertised in `scopes_supported` and the 401 challenge. Absent when not set. */
      readonly scopes?: readonly string[];
    };

/**
 * `spec.incomingAuth.authzConfig` resolved: ToolHive's Cedar options, the policies and entity
 * store read from where `type` put them (inline, a ConfigMap document, a file), the claim mapping
 * with ToolHive's defaults. The cedar-authz plugin decides with them.
 */
export interface AuthzPolicyConfig {
  /** One Cedar policy per string (ToolHive's ids: policy0, policy1, ...). */
  readonly policies: readonly string[];
  /** The static entities, a JSON string (`[]`: none). */
  readonly entitiesJson: string;
  /** The claim of group names tried first ('' : only the well-known ones). */
  readonly groupClaimName: string;
  /** A claim of role names, also made group parents ('' : none). */
  readonly roleClaimName: string;
  /** The entity type of those parents (default THVGroup). */
  readonly groupEntityType: string;
  /** Claims exposed as a space-joined `claim_<name>` and a `claimset_<name>` Set. */
  readonly multiValuedClaims: readonly string[];
  /** Where the policies were written, for messages: `spec.incomingAuth.authzConfig.inline`, a file's path, `ConfigMap/name data["key"]`. */
  readonly source: string;
}

/** `outgoingAuth.tokenExchangeCache` (Gatehouse extension). */
export interface TokenExchangeCacheConfig {
  readonly maxEntries: number;
  /** Lifetime of an exchanged token whose answer says nothing of it. */
  readonly defaultLifetimeMs: number;
  /** An exchanged token leaves the cache this long before it expires. */
  readonly expirySkewMs: number;
}

export interface UserInfoConfig {
  readonly endpointUrl: string;
  readonly httpMethod: 'GET' | 'POST';
  readonly additionalHeaders: Readonly<Record<string, string>>;
  readonly fieldMapping: {
    readonly subjectFields: readonly string[];
    readonly nameFields: readonly string[];
    readonly emailFields: readonly string[];
  };
}

export interface TokenResponseMapping {
  readonly accessTokenPath: string | null;
  readonly scopePath: string | null;
  readonly refreshTokenPath: string | null;
  readonly expiresInPath: string | null;
}

export type UpstreamProviderConfig =
  | {
      readonly name: string;
      readonly type: 'oauth2';
      readonly authorizationEndpoint: string;
      readonly tokenEndpoint: string;
      readonly clientId: string;
      readonly clientSecret: ResolvedSecretRef | null;
      readonly scopes: readonly string[];
      readonly userInfo: UserInfoConfig | null;
      readonly tokenResponseMapping: TokenResponseMapping | null;
    }
  | {
      readonly name: string;
      readonly type: 'oidc';
      readonly issuerUrl: string;
      readonly clientId: string;
      readonly clientSecret: ResolvedSecretRef | null;
      readonly scopes: readonly string[];
    };

export type AuthServerStorageConfig =
  | { readonly type: 'memory' }
  | ({ readonly type: 'redis' } & RedisConnectionConfig);

export interface AuthServerConfig {
  readonly issuer: string;
  /** What the consent page calls the MCP server; null: its resource URL (`incomingAuth.resourceUrl`). */
  readonly displayName: string | null;
  readonly authorizationEndpointBaseUrl: string | null;
  readonly signingKeys: readonly ResolvedSecretRef[];
  readonly hmacSecrets: readonly ResolvedSecretRef[];
  readonly tokenLifespans: {
    readonly accessTokenMs: number;
    readonly refreshTokenMs: number;
    readonly authCodeMs: number;
  };
  readonly upstreamProviders: readonly UpstreamProviderConfig[];
  readonly storage: AuthServerStorageConfig;
  /** `rateLimiting`: per endpoint group, a budget per client address and one shared by all. */
  readonly rateLimiting: Readonly<Record<AuthServerEndpointGroup, BudgetBounds>>;
  /** Registered clients kept at most; a full budget drops the oldest client never used. */
  readonly maxClients: number;
  /** Sign-ins in progress at most, in total and per client address. */
  readonly maxPendingLogins: number;
  readonly maxPendingLoginsPerAddress: number;
}

/** A plugin loaded from `VirtualMCPServer.spec.plugins[]`. */
export interface PluginRef {
  readonly name: string;
  /** Absolute path of the module (resolved against the config file), or a package specifier (resolved from the config file's directory when loaded: core/plugin-api/plugin-loader.ts). */
  readonly module: string;
  readonly config: unknown;
  /** YAML path of this entry's `config`, for error messages of the plugin's own schema. */
  readonly yamlPath: string;
}

export interface VmcpConfig {
  /** Absolute path of the file and its directory. */
  readonly file: string;
  readonly dir: string;
  /** `metadata.name` of the VirtualMCPServer. */
  readonly name: string;
  readonly groupRef: string;
  /**
   * The MCPServers of the group, in document order. While a registry feeds the group, the
   * configuration a generation serves has the registry's servers after them (core/vmcp/fed-config.ts).
   */
  readonly backends: readonly BackendConfig[];
  /** The registry that feeds the group (`MCPGroup.spec.registry`), or null. A fed group is always aggregated. */
  readonly registry: RegistryFeedConfig | null;
  readonly incomingAuth: IncomingAuthConfig;
  /** `spec.incomingAuth.authzConfig`: Cedar policies on who may use which tool, prompt and resource; null when there are none. */
  readonly authz: AuthzPolicyConfig | null;
  readonly outgoingAuthSource: 'discovered' | 'inline';
  readonly tokenExchangeCache: TokenExchangeCacheConfig;
  readonly authServer: AuthServerConfig | null;
  /** `spec.config.aggregation`: naming, filters, renames and paging of an aggregated group. */
  readonly aggregation: AggregationConfig;
  /** `spec.config.session`: TTL, LRU bound and storage of aggregated sessions. */
  readonly session: SessionConfig;
  /** `spec.config.operational.failureHandling`. */
  readonly failureHandling: FailureHandlingConfig;
  /** `spec.config.rateLimiting`: token buckets on `tools/call` (rate-limiting.ts); null when absent. */
  readonly rateLimiting: RateLimitConfig | null;
  readonly server: ServerSettings;
  /** `spec.config.telemetry`: OpenTelemetry traces and OTLP metrics (off unless enabled). */
  readonly telemetry: TelemetrySettings;
  /** `spec.config.audit`: the audit trail (off unless enabled). */
  readonly audit: AuditSettings;
  /** `spec.passthroughHeaders`, lower case: client headers every backend gets (identity and proxy headers only so). */
  readonly passthroughHeaders: readonly string[];
  readonly plugins: readonly PluginRef[];
}
