/**
 * The zod schemas of the vMCP resources: shapes, formats, defaults, and the references between
 * resources (checked against a `ReferenceIndex` of the whole file, so that every problem shows up
 * in one pass). Objects are strict: an unknown field is a problem, which is how typos get caught.
 *
 * Outputs keep the input's shape; only leaves are normalized (durations to ms, sizes to bytes,
 * secret references to their values, plugin paths to absolute paths). `vmcp-config.ts` assembles them
 * into the resolved `VmcpConfig`.
 */
import { parseSigningKey } from './signing-key.ts';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import type { RateBound } from '../rate-limit.ts';
import {
  AUTH_SERVER_ENDPOINT_GROUPS,
  DEFAULT_AUTH_SERVER_RATE_LIMITS,
  DEFAULT_MAX_CLIENTS,
  DEFAULT_MAX_PENDING_LOGINS,
  DEFAULT_MAX_PENDING_LOGINS_PER_ADDRESS,
  type AuthServerEndpointGroup,
} from './auth-server-limits.ts';
import { durationSchema as duration } from './duration.ts';
import { describeValue, didYouMean } from './problems.ts';
import { secretBodyShape, secretRefSchema } from './secrets.ts';
import type { SecretStore } from './secrets.ts';
import { serverSettingsSchema } from './server-settings.ts';
import { sizeSchema } from './size.ts';
import { DEFAULT_MAX_RESPONSE_BYTES } from '../backend.ts';
import { isMapping } from './yaml.ts';
import { NOT_FORWARDED } from '../http/request-head.ts';
import { addIssue, httpUrlSchema, issuerUrl, q, text, uniqueNames, whenMapping, type Ctx } from './formats.ts';

export const RESOURCE_KINDS = ['MCPGroup', 'MCPServer', 'VirtualMCPServer', 'MCPExternalAuthConfig', 'Secret'] as const;
export type ResourceKind = (typeof RESOURCE_KINDS)[number];

export const CLUSTER_ISSUER = 'https://kubernetes.default.svc';
export const CLUSTER_AUDIENCE = 'gatehouse';

/** The names a file defines, read before validation so that references are checked in the same pass. */
export interface ReferenceIndex {
  /** Directory of the config file: relative plugin modules resolve against it. */
  readonly configDir: string;
  readonly groups: ReadonlySet<string>;
  /** MCPServer name → its `spec.groupRef` (undefined when that is not a string). */
  readonly servers: ReadonlyMap<string, string | undefined>;
  readonly externalAuthConfigs: ReadonlySet<string>;
  readonly secrets: SecretStore;
  /** `spec.config.groupRef` of the VirtualMCPServer. */
  readonly vmcpGroup: string | undefined;
  /** Provider names of the VirtualMCPServer's `authServerConfig`; null when it has none. */
  readonly providers: ReadonlySet<string> | null;
  /** The VirtualMCPServer's incomingAuth is anonymous: callers present no token. */
  readonly anonymousIncoming: boolean;
}

// ---- Formats ------------------------------------------------------------------------------

const textList = z.array(text).default([]);
const stringMap = z.record(z.string(), z.string());

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):(\d{1,5})$/;

const dnsLabel = z.string().superRefine((value, ctx) => {
  if (value.length > 63 || !DNS_LABEL.test(value)) {
    ctx.addIssue(`must be a DNS label: lowercase letters, digits and "-", starting and ending with a letter or digit, at most 63 characters (got ${q(value)})`);
  }
});

const resourceName = z.string().superRefine((value, ctx) => {
  if (value.length > 253 || !DNS_SUBDOMAIN.test(value)) {
    ctx.addIssue(`must be a DNS-1123 subdomain: lowercase letters, digits, "-" and ".", starting and ending with a letter or digit, at most 253 characters (got ${q(value)})`);
  }
});

const httpUrl = httpUrlSchema('https://mcp.example.com/mcp');

/** The outgoing-auth strategies of an MCPExternalAuthConfig. */
export const EXTERNAL_AUTH_TYPES = ['upstreamInject', 'tokenExchange', 'headerInjection', 'bearerToken', 'unauthenticated'] as const;
/** RFC 8693 subject token types, short or as the URN. */
const SUBJECT_TOKEN_TYPES = [
  'access_token',
  'id_token',
  'jwt',
  'urn:ietf:params:oauth:token-type:access_token',
  'urn:ietf:params:oauth:token-type:id_token',
  'urn:ietf:params:oauth:token-type:jwt',
] as const;

/** RFC 9110 token characters: a header name. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/**
 * Headers a credential may not be put in: the ones the gateway writes itself on every backend
 * request (framing, content negotiation, the MCP session and every other `Mcp-*` header, the
 * request id), hop-by-hop and proxy ones, and ones with a meaning of their own to the backend.
 */
const GATEWAY_HEADERS = new Set([
  'host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'proxy-connection',
  'proxy-authorization', 'proxy-authenticate', 'expect', 'origin', 'forwarded',
  'content-type', 'content-encoding', 'accept', 'accept-encoding', 'last-event-id', 'x-request-id', 'cookie',
]);

/**
 * Headers `spec.passthroughHeaders` may not name: those a backend never gets from the client
 * (hop-by-hop, Host, its credentials, Origin, framing: request-head.ts), and those the gateway
 * writes itself toward a backend (content negotiation, the MCP session and every other `Mcp-*`
 * header, Last-Event-ID, the request id). Identity and proxy headers (`Forwarded` too) may be
 * named: letting them through is what the field is for.
 */
const PASSTHROUGH_REFUSED = new Set([...NOT_FORWARDED, ...[...GATEWAY_HEADERS].filter((name) => name !== 'forwarded')]);

const passthroughHeader = z.string().superRefine((name, ctx) => {
  const lower = name.toLowerCase();
  if (!HEADER_NAME.test(name)) ctx.addIssue(`must be an HTTP header name (letters, digits and !#$%&'*+-.^_\`|~), got ${q(name)}`);
  else if (lower === 'authorization' || lower === 'cookie' || lower === 'proxy-authorization') ctx.addIssue(`${q(name)} carries the client's credential for the gateway, which never reaches a backend (a backend's credential comes from its MCPExternalAuthConfig)`);
  else if (lower === 'proxy') ctx.addIssue(`${q(name)} is never passed to a backend: a CGI backend takes it for the proxy of its own HTTP requests (httpoxy)`);
  else if (PASSTHROUGH_REFUSED.has(lower) || lower.startsWith('mcp-')) ctx.addIssue(`${q(name)} is a header the gateway sets itself toward a backend (framing, hop-by-hop, content negotiation, the MCP session): it cannot be passed through`);
});

const credentialHeader = z.string().superRefine((name, ctx) => {
  if (!HEADER_NAME.test(name)) ctx.addIssue(`must be an HTTP header name (letters, digits and !#$%&'*+-.^_\`|~), got ${q(name)}`);
  else if (GATEWAY_HEADERS.has(name.toLowerCase()) || name.toLowerCase().startsWith('mcp-')) ctx.addIssue(`${q(name)} is a header the gateway reserves (framing, proxying, the MCP session): choose another header for the credential`);
});

/** Why `value` cannot be sent as one header field value, or null when it can. */
function headerValueProblem(value: string): string | null {
  if (value.length === 0) return 'is empty';
  if (/[\r\n\0]/.test(value)) return 'holds CR, LF or NUL, which cannot travel in a header (a trailing newline from `echo` is a common cause)';
  if (/[^\t\x20-\x7e]/.test(value)) return 'holds characters outside printable ASCII, which a header value cannot carry safely';
  if (value.trim() !== value) return 'begins or ends with whitespace, which HTTP drops from a header value';
  return null;
}

const hostPort = z.string().superRefine((value, ctx) => {
  const port = Number(HOST_PORT.exec(value)?.[3] ?? 0);
  if (port < 1 || port > 65535) ctx.addIssue(`must be host:port, for example redis-sentinel:26379 (got ${q(value)})`);
});

/** `MCPGroup "toolz" not found (did you mean "tools"?) (MCPGroups in this file: tools)` */
function notFound(kind: string, name: string, names: Iterable<string>, where = 'in this file'): string {
  const list = [...names];
  const known = list.length === 0 ? `no ${kind} ${where}` : `${kind}s ${where}: ${list.join(', ')}`;
  return `${kind} ${q(name)} not found${didYouMean(name, list)} (${known})`;
}

function reference(kind: string, names: ReadonlySet<string>) {
  return text.superRefine((name, ctx) => {
    if (!names.has(name)) ctx.addIssue(notFound(kind, name, names));
  });
}

/** The block named by `type` is required (unless optional), the blocks of the other types are refused. */
function blockOfType(blocks: Readonly<Record<string, string | null>>, optional: readonly string[] = []) {
  const allBlocks = [...new Set(Object.values(blocks))].filter((block) => block !== null);
  return (value: unknown, ctx: Ctx): void => {
    if (!isMapping(value) || typeof value.type !== 'string' || !Object.hasOwn(blocks, value.type)) return;
    const own = blocks[value.type] ?? null;
    if (own !== null && value[own] === undefined && !optional.includes(own)) {
      addIssue(ctx, [own], `is required when type is ${value.type}`);
    }
    for (const other of allBlocks) {
      if (other !== own && value[other] !== undefined) addIssue(ctx, [other], `must not be set when type is ${value.type}`, 'key');
    }
  };
}

// ---- Resources ----------------------------------------------------------------------------

const API_VERSION = /^[^/\s]+\/v1alpha1$/;

function apiVersion(kind: ResourceKind) {
  return z.string().superRefine((value, ctx) => {
    if (API_VERSION.test(value) || (kind === 'Secret' && value === 'v1')) return;
    const expected = kind === 'Secret' ? 'must be v1 or end in /v1alpha1' : 'must end in /v1alpha1, for example gatehouse.dev/v1alpha1';
    ctx.addIssue(`${expected} (got ${q(value)})`);
  });
}

const metadata = z.strictObject({
  name: resourceName,
  namespace: dnsLabel.optional(),
  labels: stringMap.optional(),
  annotations: stringMap.optional(),
});

function resource<K extends ResourceKind, S extends z.ZodType>(kind: K, spec: S) {
  return z.strictObject({ apiVersion: apiVersion(kind), kind: z.literal(kind), metadata, spec });
}

const URL_REQUIRED =
  'is required: Gatehouse does not start servers, it connects to running streamable-HTTP servers; ' +
  'set it to the MCP endpoint of the backend, for example http://127.0.0.1:9100/mcp';
const TRANSPORT_ONLY =
  'Gatehouse connects to running backends over streamable HTTP only (stdio and sse are not supported)';

/** One schema per kind, checking references against `index`. */
export function resourceSchemas(index: ReferenceIndex) {
  const secretRef = secretRefSchema(index.secrets);
  const hmacSecretRef = secretRef.superRefine((ref, ctx) => {
    const bytes = Buffer.byteLength(ref.value);
    if (bytes < 32) ctx.addIssue(`Secret ${q(ref.name)} key ${q(ref.key)} holds ${bytes} bytes: an HMAC secret needs at least 32`);
  });
  const signingKeyRef = secretRef.superRefine((ref, ctx) => {
    const key = parseSigningKey(ref.value);
    if (typeof key === 'string') ctx.addIssue(`Secret ${q(ref.name)} key ${q(ref.key)}: ${key}`);
  });
  const externalAuthConfigRef = z.strictObject({ name: reference('MCPExternalAuthConfig', index.externalAuthConfigs) });

  const providerName = text.superRefine((name, ctx) => {
    if (index.providers === null) {
      ctx.addIssue(`provider ${q(name)} not found: the VirtualMCPServer has no spec.authServerConfig, and upstream providers belong to that embedded authorization server`);
    } else if (!index.providers.has(name)) {
      ctx.addIssue(notFound('upstream provider', name, index.providers, 'in spec.authServerConfig.upstreamProviders'));
    }
  });

  const groupRefOfVmcp = reference('MCPGroup', index.groups).superRefine((name, ctx) => {
    const hasServer = [...index.servers.values()].includes(name);
    if (index.groups.has(name) && !hasServer) {
      ctx.addIssue(`MCPGroup ${q(name)} has no MCPServer: add an MCPServer with spec.groupRef: ${name}`);
    }
  });

  const mcpServerSpec = z.strictObject({
    url: z.string({ error: (issue) => (issue.input === undefined ? URL_REQUIRED : undefined) }).pipe(httpUrl),
    transport: z.enum(['streamable-http'], { error: (issue) => `${TRANSPORT_ONLY} (got ${describeValue(issue.input)})` }).default('streamable-http'),
    groupRef: reference('MCPGroup', index.groups),
    externalAuthConfigRef: externalAuthConfigRef.optional(),
    image: z.string().optional(),
    timeout: duration().default(30_000),
  });

  /** A header value from a Secret: what the backend receives as is, so it must be one field value. */
  const headerValueRef = secretRef.superRefine((ref, ctx) => {
    const problem = headerValueProblem(ref.value);
    if (problem !== null) ctx.addIssue(`Secret ${q(ref.name)} key ${q(ref.key)}: ${problem}`);
  });

  const externalAuthSpec = z
    .strictObject({
      type: z.enum(EXTERNAL_AUTH_TYPES),
      upstreamInject: z.strictObject({ providerName }).optional(),
      tokenExchange: z
        .strictObject({
          tokenUrl: issuerUrl,
          clientId: text,
          clientSecretRef: secretRef.optional(),
          audience: text,
          scopes: textList,
          subjectProviderName: providerName.optional(),
          subjectTokenType: z.enum(SUBJECT_TOKEN_TYPES).default('access_token'),
          externalTokenHeaderName: credentialHeader.optional(),
          // Gatehouse extension: how long an exchange may take before the request fails with 504.
          timeout: duration().default(10_000),
        })
        .superRefine((exchange, ctx) => {
          if (exchange.subjectProviderName === undefined && index.providers === null && index.anonymousIncoming) {
            addIssue(
              ctx,
              [],
              'has no subject token: it exchanges the caller\'s token, but the VirtualMCPServer\'s incomingAuth is anonymous (use incomingAuth oidc, or subjectProviderName with the embedded authorization server)',
            );
          }
        }, whenMapping)
        .optional(),
      headerInjection: z.strictObject({ headerName: credentialHeader, valueSecretRef: headerValueRef }).optional(),
      bearerToken: z
        .strictObject({
          tokenSecretRef: headerValueRef.superRefine((ref, ctx) => {
            if (/^bearer\s/i.test(ref.value)) ctx.addIssue(`Secret ${q(ref.name)} key ${q(ref.key)} starts with "Bearer ": store the token alone (the gateway adds the scheme)`);
          }),
        })
        .optional(),
    })
    .superRefine(
      blockOfType({ upstreamInject: 'upstreamInject', tokenExchange: 'tokenExchange', headerInjection: 'headerInjection', bearerToken: 'bearerToken', unauthenticated: null }),
      whenMapping,
    );

  const incomingAuth = z
    .strictObject({
      type: z.enum(['anonymous', 'oidc']),
      resourceUrl: httpUrl.optional(),
      // Scopes advertised in RFC 9728 `scopes_supported` and the challenge's `scope=`.
      scopes: z.array(text).optional(),
      oidcConfig: z
        .strictObject({
          type: z.enum(['inline', 'cluster']),
          inline: z
            .strictObject({
              issuer: issuerUrl,
              clientId: text,
              audience: text,
              clientSecretRef: secretRef.optional(),
              jwksAllowPrivateIP: z.boolean().default(false),
            })
            .optional(),
          // Defaults (CLUSTER_ISSUER, CLUSTER_AUDIENCE) are applied by the mapping, once, also when the block is absent.
          cluster: z.strictObject({ issuer: issuerUrl.optional(), audience: text.optional() }).optional(),
        })
        .superRefine(blockOfType({ inline: 'inline', cluster: 'cluster' }, ['cluster']), whenMapping)
        .optional(),
    })
    .superRefine(blockOfType({ oidc: 'oidcConfig', anonymous: null }), whenMapping)
    .superRefine((auth, ctx) => {
      if (auth.type === 'oidc' && auth.resourceUrl === undefined) {
        addIssue(ctx, ['resourceUrl'], 'is required when type is oidc: clients discover the authorization server from it (RFC 9728)');
      }
    }, whenMapping);

  /** Which MCPExternalAuthConfig a backend uses; `type` in the spelling of either manifest generation. */
  const backendAuth = z.strictObject({
    type: z.enum(['external_auth_config_ref', 'externalAuthConfigRef']).default('external_auth_config_ref'),
    externalAuthConfigRef,
  });

  const outgoingAuth = z
    .strictObject({
      source: z.enum(['discovered', 'inline']).default('discovered'),
      backends: z.record(z.string(), backendAuth).optional(),
      // For every backend that gets no strategy from its source.
      default: backendAuth.optional(),
      // Gatehouse extension: the cache of exchanged tokens (tokenExchange).
      tokenExchangeCache: z
        .strictObject({
          maxEntries: z.int().min(1).default(10_000),
          // Kept this long when the STS gives neither expires_in nor a JWT exp.
          defaultLifetime: duration().default(60_000),
          // Dropped this long before the exchanged token expires.
          expirySkew: duration().default(30_000),
        })
        .prefault({}),
    })
    .superRefine((auth, ctx) => {
      if (!isMapping(auth.backends)) return;
      if (auth.source === 'discovered') {
        addIssue(ctx, ['backends'], 'is only used when source is inline (with source discovered, each MCPServer\'s own spec.externalAuthConfigRef applies)', 'key');
      }
      const group = index.vmcpGroup !== undefined && index.groups.has(index.vmcpGroup) ? index.vmcpGroup : undefined;
      for (const name of Object.keys(auth.backends)) {
        const serverGroup = index.servers.get(name);
        if (!index.servers.has(name)) addIssue(ctx, ['backends', name], notFound('MCPServer', name, index.servers.keys()), 'key');
        else if (group !== undefined && serverGroup !== group) {
          addIssue(ctx, ['backends', name], `MCPServer ${q(name)} is not a backend of group ${q(group)} (its groupRef is ${describeValue(serverGroup)})`, 'key');
        }
      }
    }, whenMapping);

  const upstreamProvider = z
    .strictObject({
      name: dnsLabel,
      type: z.enum(['oauth2', 'oidc']),
      oauth2Config: z
        .strictObject({
          authorizationEndpoint: httpUrl,
          tokenEndpoint: httpUrl,
          clientId: text,
          clientSecretRef: secretRef.optional(),
          scopes: textList,
          userInfo: z
            .strictObject({
              endpointUrl: httpUrl,
              httpMethod: z.enum(['GET', 'POST']).default('GET'),
              additionalHeaders: stringMap.default({}),
              fieldMapping: z.strictObject({ subjectFields: textList, nameFields: textList, emailFields: textList }).prefault({}),
            })
            .optional(),
          tokenResponseMapping: z
            .strictObject({ accessTokenPath: text.optional(), scopePath: text.optional(), refreshTokenPath: text.optional(), expiresInPath: text.optional() })
            .optional(),
        })
        .optional(),
      oidcConfig: z.strictObject({ issuerUrl, clientId: text, clientSecretRef: secretRef.optional(), scopes: textList }).optional(),
    })
    .superRefine(blockOfType({ oauth2: 'oauth2Config', oidc: 'oidcConfig' }), whenMapping);

  const redisStorage = z
    .strictObject({
      sentinelConfig: z
        .strictObject({ masterName: text, sentinelAddrs: z.array(hostPort).min(1), sentinelPasswordRef: secretRef.optional() })
        .optional(),
      addr: hostPort.optional(),
      usernameRef: secretRef.optional(),
      passwordRef: secretRef.optional(),
      db: z.int().min(0).default(0),
      keyPrefix: z.string().default('gatehouse:'),
    })
    .superRefine((redis, ctx) => {
      if (redis.sentinelConfig !== undefined && redis.addr !== undefined) {
        addIssue(ctx, ['addr'], 'must not be set together with sentinelConfig: use sentinelConfig (sentinel-managed) or addr (one server), not both', 'key');
      } else if (redis.sentinelConfig === undefined && redis.addr === undefined) {
        addIssue(ctx, [], 'needs sentinelConfig (a sentinel-managed server) or addr (host:port of one server)');
      }
    }, whenMapping);

  /** A name that must be an MCPServer of the VirtualMCPServer's group. */
  const groupBackend = text.superRefine((name, ctx) => {
    const group = index.vmcpGroup !== undefined && index.groups.has(index.vmcpGroup) ? index.vmcpGroup : undefined;
    if (!index.servers.has(name)) ctx.addIssue(notFound('MCPServer', name, index.servers.keys()));
    else if (group !== undefined && index.servers.get(name) !== group) {
      ctx.addIssue(`MCPServer ${q(name)} is not a backend of group ${q(group)} (its groupRef is ${describeValue(index.servers.get(name))})`);
    }
  });

  const toolOverride = z.strictObject({ name: text.optional(), description: z.string().optional() });

  const aggregation = z
    .strictObject({
      conflictResolution: z.enum(['prefix', 'priority', 'manual']).default('prefix'),
      conflictResolutionConfig: z
        .strictObject({
          prefixFormat: text.default('{workload}_'),
          priorityOrder: z.array(groupBackend).default([]),
        })
        .prefault({}),
      tools: z
        .array(
          z.strictObject({
            workload: groupBackend,
            filter: z.array(text).optional(),
            exclude: textList,
            overrides: z.record(z.string(), toolOverride).default({}),
          }),
        )
        .default([]),
      pageSize: z.int().min(0).default(0),
    })
    .superRefine((config, ctx) => {
      // Statically known clashes: a backend listed twice, or two overrides naming the same tool.
      const workloads = new Map<string, number>();
      const targets = new Map<string, string>();
      config.tools.forEach((entry, i) => {
        if (workloads.has(entry.workload)) addIssue(ctx, ['tools', i, 'workload'], `${q(entry.workload)} is already configured in tools[${workloads.get(entry.workload)}]: merge the two entries`);
        workloads.set(entry.workload, i);
        for (const [tool, override] of Object.entries(entry.overrides)) {
          if (override.name === undefined) continue;
          const owner = targets.get(override.name);
          if (owner !== undefined) addIssue(ctx, ['tools', i, 'overrides', tool, 'name'], `${q(override.name)} is already the name of ${owner}: two tools cannot have one name`);
          targets.set(override.name, `${entry.workload}/${tool}`);
        }
      });
      if (config.conflictResolution !== 'priority' && config.conflictResolutionConfig.priorityOrder.length > 0) {
        addIssue(ctx, ['conflictResolutionConfig', 'priorityOrder'], 'is only used with conflictResolution: priority', 'key');
      }
    }, whenMapping);

  const session = z
    .strictObject({
      ttl: duration().default(30 * 60_000),
      maxSessions: z.int().min(1).default(10_000),
      maxSessionsPerPrincipal: z.int().min(1).default(100),
      maxSessionSize: sizeSchema.default(64 * 1024),
      maxSessionsSizePerPrincipal: sizeSchema.default(1024 * 1024),
      storage: z
        .strictObject({ type: z.enum(['memory', 'redis']), redis: redisStorage.optional() })
        .superRefine(blockOfType({ redis: 'redis', memory: null }), whenMapping)
        .prefault({ type: 'memory' }),
    })
    .superRefine((session, ctx) => {
      if (typeof session.maxSessionSize === 'number' && typeof session.maxSessionsSizePerPrincipal === 'number' && session.maxSessionsSizePerPrincipal < session.maxSessionSize) {
        addIssue(ctx, ['maxSessionsSizePerPrincipal'], `must be at least maxSessionSize (${session.maxSessionSize} bytes): a principal's budget must hold one session of that size (got ${session.maxSessionsSizePerPrincipal} bytes)`);
      }
    }, whenMapping);

  const operational = z.strictObject({
    // ToolHive's names. Here: how long the gateway waits for the whole answer of a call it makes
    // for itself (initialize, lists, discovery, fan-out); unset, each backend's spec.timeout.
    timeouts: z
      .strictObject({
        default: duration().optional(),
        perWorkload: z.record(z.string(), duration()).default({}),
      })
      .superRefine((timeouts, ctx) => {
        if (!isMapping(timeouts.perWorkload)) return;
        const group = index.vmcpGroup !== undefined && index.groups.has(index.vmcpGroup) ? index.vmcpGroup : undefined;
        for (const name of Object.keys(timeouts.perWorkload)) {
          if (!index.servers.has(name)) addIssue(ctx, ['perWorkload', name], notFound('MCPServer', name, index.servers.keys()), 'key');
          else if (group !== undefined && index.servers.get(name) !== group) {
            addIssue(ctx, ['perWorkload', name], `MCPServer ${q(name)} is not a backend of group ${q(group)} (its groupRef is ${describeValue(index.servers.get(name))})`, 'key');
          }
        }
      }, whenMapping)
      .prefault({}),
    // Gatehouse extension: the most a backend's answer to one request (and one event of any stream) may hold.
    maxBackendResponseSize: sizeSchema.default(DEFAULT_MAX_RESPONSE_BYTES),
    failureHandling: z
      .strictObject({
        partialFailureMode: z.enum(['bestEffort', 'fail']).default('bestEffort'),
        healthCheckInterval: duration({ allowZero: true }).default(30_000),
        unhealthyThreshold: z.int().min(1).default(3),
      })
      .prefault({}),
  });

  /** A token lifespan with its default and the bounds the authorization server allows. */
  const lifespan = (fallback: number, [min, minText]: [number, string], [max, maxText]: [number, string]) =>
    duration()
      .default(fallback)
      .superRefine((ms, ctx) => {
        if (ms < min || ms > max) ctx.addIssue(`must be between ${minText} and ${maxText}`);
      });

  /** A budget: at most maxTokens requests per refillPeriod (ToolHive's rateLimiting names). */
  const rateBound = (fallback: RateBound) =>
    z
      .strictObject({
        maxTokens: z.int().min(1).max(1_000_000_000).default(fallback.maxTokens),
        refillPeriod: duration()
          .default(fallback.refillPeriodMs)
          .superRefine((ms, ctx) => {
            if (ms < 1_000 || ms > 24 * 3_600_000) ctx.addIssue('must be between 1s and 24h');
          }),
      })
      .prefault({});
  const endpointBudget = (group: AuthServerEndpointGroup) =>
    z
      .strictObject({ perAddress: rateBound(DEFAULT_AUTH_SERVER_RATE_LIMITS[group].perKey), shared: rateBound(DEFAULT_AUTH_SERVER_RATE_LIMITS[group].shared) })
      .superRefine((budget, ctx) => {
        if (budget.shared.maxTokens < budget.perAddress.maxTokens && budget.shared.refillPeriod === budget.perAddress.refillPeriod) {
          addIssue(ctx, ['shared', 'maxTokens'], `is below perAddress.maxTokens (${budget.perAddress.maxTokens}): one address could spend the budget every address shares`);
        }
      })
      .prefault({});
  const rateLimiting = z
    .strictObject(Object.fromEntries(AUTH_SERVER_ENDPOINT_GROUPS.map((group) => [group, endpointBudget(group)])) as Record<AuthServerEndpointGroup, ReturnType<typeof endpointBudget>>)
    .prefault({});

  const authServerConfig = z.strictObject({
    issuer: issuerUrl,
    displayName: text
      .superRefine((name, ctx) => {
        if (name.length > 100) ctx.addIssue(`is ${name.length} characters long; at most 100`);
        if (/[\p{Cc}\p{Cf}]/u.test(name)) ctx.addIssue('contains a control or invisible formatting character');
      })
      .optional(),
    authorizationEndpointBaseUrl: httpUrl.optional(),
    signingKeySecretRefs: z.array(signingKeyRef).default([]),
    hmacSecretRefs: z.array(hmacSecretRef).default([]),
    tokenLifespans: z
      .strictObject({
        accessTokenLifespan: lifespan(3_600_000, [60_000, '1m'], [24 * 3_600_000, '24h']),
        refreshTokenLifespan: lifespan(168 * 3_600_000, [3_600_000, '1h'], [30 * 24 * 3_600_000, '720h (30 days)']),
        authCodeLifespan: lifespan(600_000, [30_000, '30s'], [600_000, '10m']),
      })
      .superRefine((lifespans, ctx) => {
        if (lifespans.refreshTokenLifespan < lifespans.accessTokenLifespan) {
          addIssue(ctx, ['refreshTokenLifespan'], 'must not be shorter than accessTokenLifespan: a refresh token must outlive the access tokens it renews');
        }
      })
      .prefault({}),
    upstreamProviders: uniqueNames('provider', z.array(upstreamProvider).min(1)),
    storage: z
      .strictObject({ type: z.enum(['memory', 'redis']), redis: redisStorage.optional() })
      .superRefine(blockOfType({ redis: 'redis', memory: null }), whenMapping)
      .optional(),
    rateLimiting,
    maxClients: z.int().min(1).max(10_000_000).default(DEFAULT_MAX_CLIENTS),
    maxPendingLogins: z.int().min(1).max(10_000_000).default(DEFAULT_MAX_PENDING_LOGINS),
    maxPendingLoginsPerAddress: z.int().min(1).max(10_000_000).default(DEFAULT_MAX_PENDING_LOGINS_PER_ADDRESS),
  }).superRefine((config, ctx) => {
    // Run with other fields invalid too (whenMapping): these two are read as given.
    const { maxPendingLogins: total, maxPendingLoginsPerAddress: perAddress } = config as { maxPendingLogins: unknown; maxPendingLoginsPerAddress: unknown };
    if (typeof total === 'number' && typeof perAddress === 'number' && perAddress > total) {
      addIssue(ctx, ['maxPendingLoginsPerAddress'], `is above maxPendingLogins (${total})`);
    }
  }, whenMapping);

  const server = serverSettingsSchema(4 * 1024 * 1024);

  const plugin = z.strictObject({
    name: text,
    module: text.transform((specifier, ctx) => {
      // A path (relative to the config file, or absolute), or else a package specifier kept as is.
      if (!/^\.{1,2}\/|^\//.test(specifier)) return specifier;
      const path = resolve(index.configDir, specifier);
      if (!existsSync(path)) {
        ctx.issues.push({ code: 'custom', input: specifier, message: `file not found: ${path} (relative module paths resolve against the directory of the config file)` });
      }
      return path;
    }),
    config: z.unknown().optional(),
  });

  const vmcpSpec = z
    .strictObject({
      config: z.strictObject({
        groupRef: groupRefOfVmcp,
        aggregation: aggregation.prefault({}),
        session: session.prefault({}),
        operational: operational.prefault({}),
      }),
      incomingAuth,
      outgoingAuth: outgoingAuth.prefault({}),
      authServerConfig: authServerConfig.optional(),
      server,
      passthroughHeaders: z.array(passthroughHeader).default([]),
      plugins: uniqueNames('plugin', z.array(plugin)).default([]),
    })
    .superRefine(authServerMatchesIncomingAuth, whenMapping);

  return {
    MCPGroup: resource('MCPGroup', z.strictObject({ description: z.string().optional() }).optional()),
    MCPServer: resource('MCPServer', mcpServerSpec),
    VirtualMCPServer: resource('VirtualMCPServer', vmcpSpec),
    MCPExternalAuthConfig: resource('MCPExternalAuthConfig', externalAuthSpec),
    Secret: z
      .strictObject({ apiVersion: apiVersion('Secret'), kind: z.literal('Secret'), metadata, ...secretBodyShape, spec: z.strictObject(secretBodyShape).optional() })
      .superRefine((secret, ctx) => {
        const topLevel = (['type', 'data', 'stringData'] as const).filter((field) => secret[field] !== undefined);
        if (secret.spec !== undefined && topLevel.length > 0) {
          addIssue(ctx, ['spec'], `write the Secret's fields either at the top level (as Kubernetes does) or under spec, not both (top level has: ${topLevel.join(', ')})`, 'key');
        }
      }, whenMapping),
  };
}

export type ResourceSchemas = ReturnType<typeof resourceSchemas>;
export type ParsedResource<K extends ResourceKind> = z.output<ResourceSchemas[K]>;

/**
 * With the embedded authorization server, incomingAuth validates the JWTs it issues: oidc,
 * inline, and the same issuer (core/README.md, Decisions).
 */
function authServerMatchesIncomingAuth(spec: unknown, ctx: Ctx): void {
  if (!isMapping(spec) || !isMapping(spec.authServerConfig)) return;
  const issuer = spec.authServerConfig.issuer;
  const incoming = isMapping(spec.incomingAuth) ? spec.incomingAuth : {};
  const oidcConfig = isMapping(incoming.oidcConfig) ? incoming.oidcConfig : {};
  const inline = isMapping(oidcConfig.inline) ? oidcConfig.inline : null;
  if (incoming.type === 'anonymous' || oidcConfig.type === 'cluster') {
    addIssue(
      ctx,
      ['authServerConfig'],
      'needs incomingAuth type oidc with oidcConfig type inline and the same issuer: incomingAuth validates the tokens that the embedded authorization server issues',
      'key',
    );
  } else if (inline !== null && typeof issuer === 'string' && typeof inline.issuer === 'string' && issuer !== inline.issuer) {
    addIssue(
      ctx,
      ['authServerConfig', 'issuer'],
      `must equal spec.incomingAuth.oidcConfig.inline.issuer (${q(inline.issuer)}), since incomingAuth validates the tokens this authorization server issues (got ${q(issuer)})`,
    );
  }
}
