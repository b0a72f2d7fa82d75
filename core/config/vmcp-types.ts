/**
 * The vMCP configuration after loading and validation: what `gatehouse vmcp serve` runs on.
 * Produced by `loadVmcpConfig` (core/config/vmcp-config.ts) from a multi-document YAML of
 * Kubernetes-shaped resources. Secret references are resolved to their values here; durations
 * are milliseconds; sizes are bytes; relative paths are absolute.
 */

import type { AggregationConfig, FailureHandlingConfig, SessionConfig } from '../mcp/aggregate/config.ts';
import type { RedisConnectionConfig } from '../store/redis-config.ts';
import type { ResolvedSecretRef } from './secrets.ts';
import type { ServerSettings } from './server-settings.ts';

export interface BackendConfig {
  /** `metadata.name` of the MCPServer. */
  readonly name: string;
  readonly url: string;
  readonly transport: 'streamable-http';
  /** `spec.timeout` (Gatehouse extension): time allowed for response headers. Default 30s. */
  readonly timeoutMs: number;
  /** The outgoing-auth strategy that applies to this backend (after `outgoingAuth.source`), or null. */
  readonly externalAuth: ExternalAuthConfig | null;
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

export type ExternalAuthConfig =
  | {
      /** `metadata.name` of the MCPExternalAuthConfig. */
      readonly name: string;
      readonly type: 'upstreamInject';
      readonly providerName: string;
    }
  | {
      readonly name: string;
      readonly type: 'tokenExchange';
      readonly tokenUrl: string;
      readonly clientId: string;
      readonly clientSecret: ResolvedSecretRef | null;
      readonly audience: string;
      readonly scopes: readonly string[];
      readonly subjectProviderName: string | null;
    };

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
}

/** A plugin loaded from `VirtualMCPServer.spec.plugins[]`. */
export interface PluginRef {
  readonly name: string;
  /** Absolute path of the module (resolved against the config file), or a package specifier. */
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
  /** The MCPServers of the group, in document order. */
  readonly backends: readonly BackendConfig[];
  readonly incomingAuth: IncomingAuthConfig;
  readonly outgoingAuthSource: 'discovered' | 'inline';
  readonly authServer: AuthServerConfig | null;
  /** `spec.config.aggregation`: naming, filters, renames and paging of an aggregated group. */
  readonly aggregation: AggregationConfig;
  /** `spec.config.session`: TTL, LRU bound and storage of aggregated sessions. */
  readonly session: SessionConfig;
  /** `spec.config.operational.failureHandling`. */
  readonly failureHandling: FailureHandlingConfig;
  readonly server: ServerSettings;
  readonly plugins: readonly PluginRef[];
}
