/**
 * The zod schemas of the vMCP resources: shapes, formats, defaults, and the references between
 * resources (checked against a `ReferenceIndex` of the whole file, so that every problem shows up
 * in one pass). Objects are strict: an unknown field is a problem, which is how typos get caught.
 * The parts of a VirtualMCPServer's spec have files of their own: auth-schemas.ts (incoming and
 * outgoing auth, MCPExternalAuthConfig), auth-server-schema.ts, group-schemas.ts (spec.config);
 * what they share is schema-parts.ts.
 *
 * Outputs keep the input's shape; only leaves are normalized (durations to ms, sizes to bytes,
 * secret references to their values, plugin paths to absolute paths). `vmcp-config.ts` assembles them
 * into the resolved `VmcpConfig`.
 */
import { existsSync } from 'node:fs';
import { z } from 'zod';
import { telemetrySchema } from './telemetry-schema.ts';
import { auditSchema } from './audit-schema.ts';
import { authSchemas } from './auth-schemas.ts';
import { claimsAnnotationIssues } from './authz-claims.ts';
import type { AuthzPolicyChecks } from './authz-policy.ts';
import { authServerConfigSchema, authServerMatchesIncomingAuth } from './auth-server-schema.ts';
import { durationSchema as duration } from './duration.ts';
import { addIssue, q, text, uniqueNames, whenMapping } from './formats.ts';
import { groupSchemas } from './group-schemas.ts';
import { groupRegistrySchema } from './group-registry-schema.ts';
import { rateLimitingSchema } from './rate-limiting.ts';
import { isPluginPath, pluginModuleOf } from './plugin-configs.ts';
import { describeValue } from './problems.ts';
import { httpUrl, passthroughHeader, reference, resourceName, dnsLabel, stringMap, schemaContext, type ReferenceIndex } from './schema-parts.ts';
import { secretBodyShape } from './secrets.ts';
import { serverSettingsSchema } from './server-settings.ts';
import { stdioFields, transportFieldIssues } from './stdio-schema.ts';
import { workersShareState } from './workers-check.ts';

export type { ReferenceIndex } from './schema-parts.ts';

export const RESOURCE_KINDS = ['MCPGroup', 'MCPServer', 'VirtualMCPServer', 'MCPExternalAuthConfig', 'Secret', 'ConfigMap'] as const;
export type ResourceKind = (typeof RESOURCE_KINDS)[number];

export const CLUSTER_ISSUER = 'https://kubernetes.default.svc';
export const CLUSTER_AUDIENCE = 'gatehouse';
/** An MCPServer's `spec.timeout` when it has none (a registry's servers have none). */
export const DEFAULT_BACKEND_TIMEOUT_MS = 30_000;

// ---- Resources ----------------------------------------------------------------------------

const API_VERSION = /^[^/\s]+\/v1alpha1$/;

/** Kinds of Kubernetes' core API, written with `apiVersion: v1` as Kubernetes does. */
const CORE_KINDS: ReadonlySet<ResourceKind> = new Set(['Secret', 'ConfigMap']);

function apiVersion(kind: ResourceKind) {
  return z.string().superRefine((value, ctx) => {
    if (API_VERSION.test(value) || (CORE_KINDS.has(kind) && value === 'v1')) return;
    const expected = CORE_KINDS.has(kind) ? 'must be v1 or end in /v1alpha1' : 'must end in /v1alpha1, for example gatehouse.dev/v1alpha1';
    ctx.addIssue(`${expected} (got ${q(value)})`);
  });
}

const metadata = z.strictObject({
  name: resourceName,
  namespace: dnsLabel.optional(),
  labels: stringMap.optional(),
  annotations: stringMap.optional(),
});

/** An MCPServer's annotations reach plugins: its claims annotation is checked here, at its line (authz-claims.ts). */
const serverMetadata = metadata.extend({ annotations: stringMap.superRefine(claimsAnnotationIssues).optional() });

function resource<K extends ResourceKind, S extends z.ZodType, M extends z.ZodType = typeof metadata>(kind: K, spec: S, meta: M = metadata as unknown as M) {
  return z.strictObject({ apiVersion: apiVersion(kind), kind: z.literal(kind), metadata: meta, spec });
}

const TRANSPORTS = ['streamable-http', 'stdio', 'sse'] as const;

/** The `spec.plugins[]` entry: a module path resolves against the config file's directory. */
function pluginSchema(configDir: string) {
  return z.strictObject({
    name: text,
    module: text.transform((specifier, ctx) => {
      // A path (relative to the config file, or absolute), or else a package specifier kept as is.
      if (!isPluginPath(specifier)) return specifier;
      const path = pluginModuleOf(specifier, configDir);
      if (!existsSync(path)) {
        ctx.issues.push({ code: 'custom', input: specifier, message: `file not found: ${path} (relative module paths resolve against the directory of the config file)` });
      }
      return path;
    }),
    config: z.unknown().optional(),
  });
}

/** A ConfigMap key, as Kubernetes allows them. */
const CONFIG_MAP_KEY = /^[-._a-zA-Z0-9]+$/;

/** A ConfigMap: text values under `data` (what `authzConfig.configMap` reads), as Kubernetes writes it. */
const configMapSchema = z.strictObject({
  apiVersion: apiVersion('ConfigMap'),
  kind: z.literal('ConfigMap'),
  metadata,
  immutable: z.boolean().optional(),
  data: z.record(z.string(), z.string()).superRefine((data, ctx) => {
    for (const key of Object.keys(data)) {
      if (!CONFIG_MAP_KEY.test(key)) addIssue(ctx, [key], `key ${q(key)} may only hold letters, digits, "-", "_" and "."`, 'key');
    }
  }).default({}),
});

/** An MCPServer's spec: how it is reached (transport-schema fields in stdio-schema.ts), its group, credentials and timeout. */
function mcpServerSpecSchema(schema: ReturnType<typeof schemaContext>, externalAuthConfigRef: ReturnType<typeof authSchemas>['externalAuthConfigRef']) {
  return z
    .strictObject({
      url: z.string().pipe(httpUrl).optional(),
      transport: z.enum(TRANSPORTS, { error: (issue) => `must be one of ${TRANSPORTS.join(', ')} (got ${describeValue(issue.input)})` }).default('streamable-http'),
      ...stdioFields(schema, schema.index.configDir),
      groupRef: reference('MCPGroup', schema.index.groups),
      externalAuthConfigRef: externalAuthConfigRef.optional(),
      image: z.string().optional(),
      timeout: duration().default(DEFAULT_BACKEND_TIMEOUT_MS),
    })
    .superRefine(transportFieldIssues, whenMapping);
}

/** One schema per kind, checking references against `index`; `authzChecks`: Cedar's checks of authorization policies, when given. */
export function resourceSchemas(index: ReferenceIndex, authzChecks: AuthzPolicyChecks | null = null) {
  const schema = schemaContext(index, authzChecks);
  const { externalAuthConfigRef, externalAuthSpec, incomingAuth, outgoingAuth } = authSchemas(schema);
  const { aggregation, session, operational } = groupSchemas(schema);
  const groupRefOfVmcp = reference('MCPGroup', index.groups).superRefine((name, ctx) => {
    const hasServer = [...index.servers.values()].includes(name);
    // A group fed by a registry may start with none: its servers come from the registry.
    if (index.groups.has(name) && !hasServer && !index.fedGroups.has(name)) {
      ctx.addIssue(`MCPGroup ${q(name)} has no MCPServer: add an MCPServer with spec.groupRef: ${name}, or let a registry feed the group (MCPGroup spec.registry)`);
    }
  });

  const mcpServerSpec = mcpServerSpecSchema(schema, externalAuthConfigRef);

  const server = serverSettingsSchema(4 * 1024 * 1024);
  const plugin = pluginSchema(index.configDir);
  const authServerConfig = authServerConfigSchema(schema);

  const vmcpSpec = z
    .strictObject({
      config: z.strictObject({
        groupRef: groupRefOfVmcp,
        aggregation: aggregation.prefault({}),
        session: session.prefault({}),
        operational: operational.prefault({}),
        rateLimiting: rateLimitingSchema(schema).optional(),
        telemetry: telemetrySchema.optional(),
        audit: auditSchema.optional(),
      }),
      incomingAuth,
      outgoingAuth: outgoingAuth.prefault({}),
      authServerConfig: authServerConfig.optional(),
      server,
      passthroughHeaders: z.array(passthroughHeader).default([]),
      plugins: uniqueNames('plugin', z.array(plugin)).default([]),
    })
    .superRefine(authServerMatchesIncomingAuth, whenMapping)
    .superRefine(workersShareState, whenMapping);

  return {
    MCPGroup: resource('MCPGroup', z.strictObject({ description: z.string().optional(), registry: groupRegistrySchema(schema).optional() }).optional()),
    MCPServer: resource('MCPServer', mcpServerSpec, serverMetadata),
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
    ConfigMap: configMapSchema,
  };
}

export type ResourceSchemas = ReturnType<typeof resourceSchemas>;
export type ParsedResource<K extends ResourceKind> = z.output<ResourceSchemas[K]>;
