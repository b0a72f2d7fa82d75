/**
 * The building blocks the vMCP resource schemas share: formats (DNS names, header names and
 * values, host:port), references to another resource by name (with a did-you-mean), and the
 * `type`-selects-a-block rule of the Kubernetes-shaped specs.
 */
import { z } from 'zod';
import { NOT_FORWARDED } from '../http/request-head.ts';
import { addIssue, httpUrlSchema, q, text, whenMapping, type Ctx } from './formats.ts';
import { describeValue, didYouMean } from './problems.ts';
import type { AuthzPolicyChecks } from './authz-policy.ts';
import { secretRefSchema, type SecretStore } from './secrets.ts';
import { isMapping, type YamlDocument } from './yaml.ts';

/** A ConfigMap document of the file: its `data` as written, and where it is (positions inside a value). */
export interface ConfigMapEntry {
  readonly data: Readonly<Record<string, unknown>>;
  readonly document: YamlDocument;
  /** `ConfigMap/name`, for messages. */
  readonly label: string;
}

/** The names a file defines, read before validation so that references are checked in the same pass. */
export interface ReferenceIndex {
  /** Directory of the config file: relative plugin modules resolve against it. */
  readonly configDir: string;
  readonly groups: ReadonlySet<string>;
  /** The MCPGroups with a `spec.registry` (their servers may all come from the registry). */
  readonly fedGroups: ReadonlySet<string>;
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
  /** ConfigMap documents by name (the first of a name): what `authzConfig.configMap` refers to. */
  readonly configMaps: ReadonlyMap<string, ConfigMapEntry>;
}

export const textList = z.array(text).default([]);
export const stringMap = z.record(z.string(), z.string());

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):(\d{1,5})$/;

export const dnsLabel = z.string().superRefine((value, ctx) => {
  if (value.length > 63 || !DNS_LABEL.test(value)) {
    ctx.addIssue(`must be a DNS label: lowercase letters, digits and "-", starting and ending with a letter or digit, at most 63 characters (got ${q(value)})`);
  }
});

export const resourceName = z.string().superRefine((value, ctx) => {
  if (value.length > 253 || !DNS_SUBDOMAIN.test(value)) {
    ctx.addIssue(`must be a DNS-1123 subdomain: lowercase letters, digits, "-" and ".", starting and ending with a letter or digit, at most 253 characters (got ${q(value)})`);
  }
});

export const httpUrl = httpUrlSchema('https://mcp.example.com/mcp');

/** RFC 9110 token characters: a header name. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/**
 * Headers a credential may not be put in: the ones the gateway writes itself on every backend
 * request (framing, content negotiation, the MCP session and every other `Mcp-*` header, the
 * request id), hop-by-hop and proxy ones, and ones with a meaning of their own to the backend.
 */
const GATEWAY_HEADERS = new Set([
  'host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'proxy-connection',
  'proxy-authorization', 'proxy-authenticate', 'expect', 'origin', 'forwarded', 'via',
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

export const passthroughHeader = z.string().superRefine((name, ctx) => {
  const lower = name.toLowerCase();
  if (!HEADER_NAME.test(name)) ctx.addIssue(`must be an HTTP header name (letters, digits and !#$%&'*+-.^_\`|~), got ${q(name)}`);
  else if (lower === 'authorization' || lower === 'cookie' || lower === 'proxy-authorization') ctx.addIssue(`${q(name)} carries the client's credential for the gateway, which never reaches a backend (a backend's credential comes from its MCPExternalAuthConfig)`);
  else if (lower === 'proxy') ctx.addIssue(`${q(name)} is never passed to a backend: a CGI backend takes it for the proxy of its own HTTP requests (httpoxy)`);
  else if (PASSTHROUGH_REFUSED.has(lower) || lower.startsWith('mcp-')) ctx.addIssue(`${q(name)} is a header the gateway sets itself toward a backend (framing, hop-by-hop, content negotiation, the MCP session): it cannot be passed through`);
});

export const credentialHeader = z.string().superRefine((name, ctx) => {
  if (!HEADER_NAME.test(name)) ctx.addIssue(`must be an HTTP header name (letters, digits and !#$%&'*+-.^_\`|~), got ${q(name)}`);
  else if (GATEWAY_HEADERS.has(name.toLowerCase()) || name.toLowerCase().startsWith('mcp-')) ctx.addIssue(`${q(name)} is a header the gateway reserves (framing, proxying, the MCP session): choose another header for the credential`);
});

/** Why `value` cannot be sent as one header field value, or null when it can. */
export function headerValueProblem(value: string): string | null {
  if (value.length === 0) return 'is empty';
  if (/[\r\n\0]/.test(value)) return 'holds CR, LF or NUL, which cannot travel in a header (a trailing newline from `echo` is a common cause)';
  if (/[^\t\x20-\x7e]/.test(value)) return 'holds characters outside printable ASCII, which a header value cannot carry safely';
  if (value.trim() !== value) return 'begins or ends with whitespace, which HTTP drops from a header value';
  return null;
}

export const hostPort = z.string().superRefine((value, ctx) => {
  const port = Number(HOST_PORT.exec(value)?.[3] ?? 0);
  if (port < 1 || port > 65535) ctx.addIssue(`must be host:port, for example redis-sentinel:26379 (got ${q(value)})`);
});

/** `MCPGroup "toolz" not found (did you mean "tools"?) (MCPGroups in this file: tools)` */
export function notFound(kind: string, name: string, names: Iterable<string>, where = 'in this file'): string {
  const list = [...names];
  const known = list.length === 0 ? `no ${kind} ${where}` : `${kind}s ${where}: ${list.join(', ')}`;
  return `${kind} ${q(name)} not found${didYouMean(name, list)} (${known})`;
}

/** Why `name` cannot be a backend of the VirtualMCPServer's group (no such MCPServer, or another group's), or null. */
export function groupBackendProblem(index: ReferenceIndex, name: string): string | null {
  if (!index.servers.has(name)) return notFound('MCPServer', name, index.servers.keys());
  const group = index.vmcpGroup !== undefined && index.groups.has(index.vmcpGroup) ? index.vmcpGroup : undefined;
  if (group !== undefined && index.servers.get(name) !== group) {
    return `MCPServer ${q(name)} is not a backend of group ${q(group)} (its groupRef is ${describeValue(index.servers.get(name))})`;
  }
  return null;
}

export function reference(kind: string, names: ReadonlySet<string>) {
  return text.superRefine((name, ctx) => {
    if (!names.has(name)) ctx.addIssue(notFound(kind, name, names));
  });
}

/** The block named by `type` is required (unless optional), the blocks of the other types are refused. */
export function blockOfType(blocks: Readonly<Record<string, string | null>>, optional: readonly string[] = []) {
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

/** Redis (one server, or Sentinel-managed) for sessions or the authorization server's storage. */
export function redisStorageSchema(secretRef: ReturnType<typeof secretRefSchema>) {
  return z
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
}

/** What the schemas of one file are built from: its index of names, and the references every part checks against it. */
export interface SchemaContext {
  readonly index: ReferenceIndex;
  /** `{name, key}` of a Secret in the file, resolved to its value. */
  readonly secretRef: ReturnType<typeof secretRefSchema>;
  /** A provider of the VirtualMCPServer's embedded authorization server. */
  readonly providerName: z.ZodType<string>;
  /** Cedar's checks of authorization policies (authz-policy.ts), when the composition root gave them. */
  readonly authzChecks: AuthzPolicyChecks | null;
}

export function schemaContext(index: ReferenceIndex, authzChecks: AuthzPolicyChecks | null = null): SchemaContext {
  const secretRef = secretRefSchema(index.secrets);
  const providerName = text.superRefine((name, ctx) => {
    if (index.providers === null) {
      ctx.addIssue(`provider ${q(name)} not found: the VirtualMCPServer has no spec.authServerConfig, and upstream providers belong to that embedded authorization server`);
    } else if (!index.providers.has(name)) {
      ctx.addIssue(notFound('upstream provider', name, index.providers, 'in spec.authServerConfig.upstreamProviders'));
    }
  });

  return { index, secretRef, providerName, authzChecks };
}
