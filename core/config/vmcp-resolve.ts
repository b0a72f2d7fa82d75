/**
 * The resolved vMCP config from a file's resources once every one passed its schema: the group's
 * backends with their outgoing auth, durations in milliseconds, the auth server's and the
 * session's settings in the shapes the engine reads (vmcp-types.ts).
 */
import { toTelemetrySettings } from './telemetry-schema.ts';
import { toAuditSettings } from './audit-schema.ts';
import { dirname } from 'node:path';
import type { AggregationConfig } from './aggregation-config.ts';
import { AUTH_SERVER_ENDPOINT_GROUPS } from './auth-server-limits.ts';
import type { AuthzClaimsInput } from './authz-claims.ts';
import { NO_ITEM_CLAIMS, STREAMABLE_HTTP, type BackendTransportConfig, type ItemClaims } from '../plugin-api/backend.ts';
import { STDIO_DEFAULTS } from './stdio-schema.ts';
import type { RedisConnectionConfig } from './redis-config.ts';
import { toRateLimiting } from './rate-limiting.ts';
import { CLUSTER_AUDIENCE, CLUSTER_ISSUER, DEFAULT_BACKEND_TIMEOUT_MS, type ParsedResource, type ResourceKind } from './vmcp-schema.ts';
import type {
  AuthServerConfig,
  AuthServerStorageConfig,
  BackendConfig,
  ExternalAuthConfig,
  IncomingAuthConfig,
  RegistryFeedConfig,
  UpstreamProviderConfig,
  VmcpConfig,
} from './vmcp-types.ts';

/** Each kind's resources of the file, as their schemas parsed them. */
export type ParsedResources = { [K in ResourceKind]: ParsedResource<K>[] };

type VmcpSpec = ParsedResource<'VirtualMCPServer'>['spec'];
type AuthServerInput = NonNullable<VmcpSpec['authServerConfig']>;

/** A value the schema's checks guarantee. */
function checked<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`internal error: ${what} is missing after validation`);
  return value;
}

/** The resolved config of a file whose resources all passed their schemas. */
export function assemble(parsed: ParsedResources, file: string): VmcpConfig {
  const vmcp = checked(parsed.VirtualMCPServer[0], 'the VirtualMCPServer');
  const { spec } = vmcp;
  const label = `VirtualMCPServer/${vmcp.metadata.name}`;
  const backends = toBackends(parsed, spec);
  return {
    file,
    dir: dirname(file),
    name: vmcp.metadata.name,
    groupRef: spec.config.groupRef,
    backends,
    registry: toRegistryFeed(parsed, spec),
    incomingAuth: toIncomingAuth(spec.incomingAuth),
    authz: spec.incomingAuth.authzConfig ?? null,
    outgoingAuthSource: spec.outgoingAuth.source,
    tokenExchangeCache: {
      maxEntries: spec.outgoingAuth.tokenExchangeCache.maxEntries,
      defaultLifetimeMs: spec.outgoingAuth.tokenExchangeCache.defaultLifetime,
      expirySkewMs: spec.outgoingAuth.tokenExchangeCache.expirySkew,
    },
    authServer: spec.authServerConfig === undefined ? null : toAuthServer(spec.authServerConfig),
    aggregation: toAggregation(spec.config.aggregation),
    session: toSession(spec.config.session),
    failureHandling: {
      partialFailureMode: spec.config.operational.failureHandling.partialFailureMode,
      healthCheckIntervalMs: spec.config.operational.failureHandling.healthCheckInterval,
      unhealthyThreshold: spec.config.operational.failureHandling.unhealthyThreshold,
    },
    rateLimiting: toRateLimiting(spec.config.rateLimiting),
    server: spec.server,
    telemetry: toTelemetrySettings(spec.config.telemetry),
    audit: toAuditSettings(spec.config.audit, dirname(file)),
    passthroughHeaders: [...new Set(spec.passthroughHeaders.map((name) => name.toLowerCase()))],
    plugins: spec.plugins.map((plugin, i) => ({
      name: plugin.name,
      module: plugin.module,
      config: plugin.config,
      yamlPath: `${label} spec.plugins[${i}].config`,
    })),
  };
}

/** The group's backends, each with the outgoing auth the config gives it. */
function toBackends(parsed: ParsedResources, spec: VmcpSpec): BackendConfig[] {
  // With the embedded authorization server, the caller's token is the gateway's own: an exchange's
  // subject is then, unless named, the login's token of the first upstream provider.
  const firstProvider = spec.authServerConfig?.upstreamProviders[0]?.name ?? null;
  const externalAuths = new Map(parsed.MCPExternalAuthConfig.map((config) => [config.metadata.name, toExternalAuth(config, firstProvider)]));
  const timeouts = spec.config.operational.timeouts;
  return parsed.MCPServer.filter((server) => server.spec.groupRef === spec.config.groupRef).map((server): BackendConfig => {
    const outgoing = spec.outgoingAuth;
    const own =
      outgoing.source === 'discovered'
        ? server.spec.externalAuthConfigRef?.name
        : outgoing.backends?.[server.metadata.name]?.externalAuthConfigRef.name;
    const refName = own ?? outgoing.default?.externalAuthConfigRef.name;
    return {
      name: server.metadata.name,
      url: server.spec.url ?? `stdio://${server.metadata.name}`,
      transport: transportOf(server.spec),
      timeoutMs: server.spec.timeout,
      answerTimeoutMs: timeouts.perWorkload[server.metadata.name] ?? timeouts.default ?? server.spec.timeout,
      maxResponseBytes: spec.config.operational.maxBackendResponseSize,
      externalAuth: refName === undefined ? null : checked(externalAuths.get(refName), `MCPExternalAuthConfig ${refName}`),
      annotations: server.metadata.annotations ?? {},
      authzClaims: itemClaimsOf(spec.config.aggregation.tools.find((entry) => entry.workload === server.metadata.name)?.authzClaims),
      // The operator wrote its URL: any address.
      endpointPolicy: null,
    };
  });
}

/** How an MCPServer is reached: over HTTP at its URL, or a command the gateway runs (its env's secrets resolved). */
function transportOf(spec: ParsedResource<'MCPServer'>['spec']): BackendTransportConfig {
  if (spec.transport !== 'stdio') return spec.transport === 'sse' ? SSE : STREAMABLE_HTTP;
  const env: Record<string, string> = {};
  for (const entry of spec.env ?? []) env[entry.name] = entry.value ?? entry.valueFrom!.secretKeyRef.value;
  const stdio = spec.stdio;
  return {
    kind: 'stdio',
    command: spec.command!,
    args: spec.args ?? [],
    env,
    cwd: spec.cwd ?? null,
    shared: stdio?.shared ?? STDIO_DEFAULTS.shared,
    maxProcesses: stdio?.maxProcesses ?? STDIO_DEFAULTS.maxProcesses,
    idleTimeoutMs: stdio?.idleTimeout ?? STDIO_DEFAULTS.idleTimeoutMs,
    startupTimeoutMs: stdio?.startupTimeout ?? STDIO_DEFAULTS.startupTimeoutMs,
    stopGraceMs: stdio?.stopGracePeriod ?? STDIO_DEFAULTS.stopGraceMs,
  };
}

const SSE: BackendTransportConfig = Object.freeze({ kind: 'sse' });

/** A workload's `authzClaims`, each map as written (absent: none). */
function itemClaimsOf(input: AuthzClaimsInput | undefined): ItemClaims {
  return input === undefined ? NO_ITEM_CLAIMS : { tools: input.tools, prompts: input.prompts, resources: input.resources };
}

/** `spec.registry` of the served group, or null. */
function toRegistryFeed(parsed: ParsedResources, spec: VmcpSpec): RegistryFeedConfig | null {
  const group = parsed.MCPGroup.find((g) => g.metadata.name === spec.config.groupRef);
  const registry = group?.spec?.registry;
  if (group === undefined || registry === undefined) return null;
  return {
    where: `MCPGroup/${group.metadata.name} spec.registry`,
    url: registry.url,
    name: registry.name,
    token: registry.tokenSecretRef ?? null,
    intervalMs: registry.syncPolicy.interval,
    timeoutMs: registry.timeout,
    maxResponseBytes: registry.maxResponseSize,
    maxServers: registry.maxServers,
    endpoints: { where: `MCPGroup/${group.metadata.name} spec.registry`, allowPrivate: registry.allowPrivateEndpoint, allowedCidrs: registry.allowedEndpointCIDRs },
    backend: {
      timeoutMs: DEFAULT_BACKEND_TIMEOUT_MS,
      answerTimeoutMs: spec.config.operational.timeouts.default ?? DEFAULT_BACKEND_TIMEOUT_MS,
      maxResponseBytes: spec.config.operational.maxBackendResponseSize,
    },
  };
}

function toSession(session: VmcpSpec['config']['session']): VmcpConfig['session'] {
  return {
    ttlMs: session.ttl,
    maxSessions: session.maxSessions,
    maxSessionsPerPrincipal: session.maxSessionsPerPrincipal,
    maxSessionBytes: session.maxSessionSize,
    maxSessionsBytesPerPrincipal: session.maxSessionsSizePerPrincipal,
    storage: session.storage.type === 'redis' ? { type: 'redis', redis: toRedis(checked(session.storage.redis, 'session.storage.redis')) } : { type: 'memory' },
  };
}

function toIncomingAuth(auth: VmcpSpec['incomingAuth']): IncomingAuthConfig {
  if (auth.type === 'anonymous') return { type: 'anonymous', resourceUrl: auth.resourceUrl ?? null };
  const resourceUrl = checked(auth.resourceUrl, 'incomingAuth.resourceUrl');
  const oidc = checked(auth.oidcConfig, 'incomingAuth.oidcConfig');
  const scopes = auth.scopes === undefined ? {} : { scopes: auth.scopes };
  if (oidc.type === 'cluster') {
    return { type: 'oidc', resourceUrl, ...scopes, oidc: { type: 'cluster', issuer: oidc.cluster?.issuer ?? CLUSTER_ISSUER, audience: oidc.cluster?.audience ?? CLUSTER_AUDIENCE } };
  }
  const inline = checked(oidc.inline, 'incomingAuth.oidcConfig.inline');
  return {
    type: 'oidc',
    resourceUrl,
    ...scopes,
    oidc: {
      type: 'inline',
      issuer: inline.issuer,
      clientId: inline.clientId,
      audience: inline.audience,
      clientSecret: inline.clientSecretRef ?? null,
      jwksAllowPrivateIP: inline.jwksAllowPrivateIP,
    },
  };
}

const TOKEN_TYPE_URN = 'urn:ietf:params:oauth:token-type:';

function toExternalAuth(config: ParsedResource<'MCPExternalAuthConfig'>, defaultSubjectProvider: string | null): ExternalAuthConfig {
  const name = config.metadata.name;
  const { spec } = config;
  switch (spec.type) {
    case 'upstreamInject':
      return { name, type: 'upstreamInject', providerName: checked(spec.upstreamInject, 'upstreamInject').providerName };
    case 'headerInjection': {
      const block = checked(spec.headerInjection, 'headerInjection');
      return { name, type: 'headerInjection', headerName: block.headerName.toLowerCase(), value: block.valueSecretRef };
    }
    case 'bearerToken':
      return { name, type: 'bearerToken', token: checked(spec.bearerToken, 'bearerToken').tokenSecretRef };
    case 'unauthenticated':
      return { name, type: 'unauthenticated' };
    case 'tokenExchange': {
      const exchange = checked(spec.tokenExchange, 'tokenExchange');
      return {
        name,
        type: 'tokenExchange',
        tokenUrl: exchange.tokenUrl,
        clientId: exchange.clientId,
        clientSecret: exchange.clientSecretRef ?? null,
        audience: exchange.audience,
        scopes: exchange.scopes,
        subjectProviderName: exchange.subjectProviderName ?? defaultSubjectProvider,
        subjectTokenType: exchange.subjectTokenType.startsWith(TOKEN_TYPE_URN) ? exchange.subjectTokenType : TOKEN_TYPE_URN + exchange.subjectTokenType,
        externalTokenHeaderName: exchange.externalTokenHeaderName?.toLowerCase() ?? null,
        timeoutMs: exchange.timeout,
      };
    }
  }
}

function toAuthServer(config: AuthServerInput): AuthServerConfig {
  return {
    issuer: config.issuer,
    displayName: config.displayName ?? null,
    authorizationEndpointBaseUrl: config.authorizationEndpointBaseUrl ?? null,
    signingKeys: config.signingKeySecretRefs,
    hmacSecrets: config.hmacSecretRefs,
    tokenLifespans: {
      accessTokenMs: config.tokenLifespans.accessTokenLifespan,
      refreshTokenMs: config.tokenLifespans.refreshTokenLifespan,
      authCodeMs: config.tokenLifespans.authCodeLifespan,
    },
    upstreamProviders: config.upstreamProviders.map(toUpstreamProvider),
    storage: toStorage(config.storage),
    rateLimiting: Object.fromEntries(
      AUTH_SERVER_ENDPOINT_GROUPS.map((group) => {
        const { perAddress, shared } = config.rateLimiting[group];
        return [group, { perKey: { maxTokens: perAddress.maxTokens, refillPeriodMs: perAddress.refillPeriod }, shared: { maxTokens: shared.maxTokens, refillPeriodMs: shared.refillPeriod } }];
      }),
    ) as AuthServerConfig['rateLimiting'],
    maxClients: config.maxClients,
    maxPendingLogins: config.maxPendingLogins,
    maxPendingLoginsPerAddress: config.maxPendingLoginsPerAddress,
  };
}

function toUpstreamProvider(provider: AuthServerInput['upstreamProviders'][number]): UpstreamProviderConfig {
  if (provider.type === 'oidc') {
    const oidc = checked(provider.oidcConfig, `provider ${provider.name} oidcConfig`);
    const { issuerUrl, clientId, scopes } = oidc;
    return { name: provider.name, type: 'oidc', issuerUrl, clientId, clientSecret: oidc.clientSecretRef ?? null, scopes };
  }
  const oauth2 = checked(provider.oauth2Config, `provider ${provider.name} oauth2Config`);
  const mapping = oauth2.tokenResponseMapping;
  return {
    name: provider.name,
    type: 'oauth2',
    authorizationEndpoint: oauth2.authorizationEndpoint,
    tokenEndpoint: oauth2.tokenEndpoint,
    clientId: oauth2.clientId,
    clientSecret: oauth2.clientSecretRef ?? null,
    scopes: oauth2.scopes,
    userInfo: oauth2.userInfo ?? null,
    tokenResponseMapping:
      mapping === undefined
        ? null
        : {
            accessTokenPath: mapping.accessTokenPath ?? null,
            scopePath: mapping.scopePath ?? null,
            refreshTokenPath: mapping.refreshTokenPath ?? null,
            expiresInPath: mapping.expiresInPath ?? null,
          },
  };
}

function toAggregation(input: VmcpSpec['config']['aggregation']): AggregationConfig {
  return {
    conflictResolution: input.conflictResolution,
    prefixFormat: input.conflictResolutionConfig.prefixFormat,
    priorityOrder: input.conflictResolutionConfig.priorityOrder,
    // An entry that only carries authzClaims renames and filters nothing: it does not make a
    // group of one backend aggregated (its claims are the backend's: toBackends).
    tools: Object.fromEntries(
      input.tools.filter((entry) => entry.authzClaims === undefined || entry.filter !== undefined || entry.exclude.length > 0 || Object.keys(entry.overrides).length > 0).map((entry) => [
        entry.workload,
        {
          filter: entry.filter ?? null,
          exclude: entry.exclude,
          overrides: Object.fromEntries(
            Object.entries(entry.overrides).map(([tool, o]) => [tool, { name: o.name ?? null, description: o.description ?? null }]),
          ),
        },
      ]),
    ),
    pageSize: input.pageSize,
  };
}

function toStorage(storage: AuthServerInput['storage']): AuthServerStorageConfig {
  if (storage === undefined || storage.type === 'memory') return { type: 'memory' };
  return { type: 'redis', ...toRedis(checked(storage.redis, 'storage.redis')) };
}

type RedisInput = NonNullable<NonNullable<AuthServerInput['storage']>['redis']>;

function toRedis(redis: RedisInput): RedisConnectionConfig {
  const sentinel = redis.sentinelConfig;
  return {
    sentinel:
      sentinel === undefined
        ? null
        : { masterName: sentinel.masterName, addresses: sentinel.sentinelAddrs, password: sentinel.sentinelPasswordRef ?? null },
    address: redis.addr ?? null,
    username: redis.usernameRef ?? null,
    password: redis.passwordRef ?? null,
    db: redis.db,
    keyPrefix: redis.keyPrefix,
  };
}
