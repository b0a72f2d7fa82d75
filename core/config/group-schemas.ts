/**
 * The schema of how a VirtualMCPServer serves its group (`spec.config`): aggregation (naming,
 * conflicts, per-backend tool filters and overrides, paging), sessions (lifetime, counts and
 * sizes, storage) and operation (timeouts of the gateway's own calls, the bound of a backend's
 * answers, failure handling and health checks).
 */
import { z } from 'zod';
import { DEFAULT_MAX_RESPONSE_BYTES } from '../plugin-api/backend.ts';
import { durationSchema as duration } from './duration.ts';
import { authzClaimsSchema, unservedToolIssues } from './authz-claims.ts';
import { addIssue, q, text, whenMapping } from './formats.ts';
import { blockOfType, groupBackendProblem, redisStorageSchema, textList, type ReferenceIndex, type SchemaContext } from './schema-parts.ts';
import { sizeSchema } from './size.ts';
import { isMapping } from './yaml.ts';

/** `spec.config.aggregation`, `spec.config.session` and `spec.config.operational`. */
export function groupSchemas(schema: SchemaContext) {
  return { aggregation: aggregationSchema(schema.index), session: sessionSchema(schema), operational: operationalSchema(schema.index) };
}

const toolOverride = z.strictObject({ name: text.optional(), description: z.string().optional() });

function aggregationSchema(index: ReferenceIndex) {
  /** A name that must be an MCPServer of the VirtualMCPServer's group. */
  const groupBackend = text.superRefine((name, ctx) => {
    const problem = groupBackendProblem(index, name);
    if (problem !== null) ctx.addIssue(problem);
  });
  return z
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
            // Gatehouse extension: who may see and use each of the workload's items (authz-claims.ts).
            authzClaims: authzClaimsSchema.optional(),
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
        unservedToolIssues(entry, ['tools', i], ctx);
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
}

function sessionSchema(schema: SchemaContext) {
  const redisStorage = redisStorageSchema(schema.secretRef);
  return z
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
}

function operationalSchema(index: ReferenceIndex) {
  return z.strictObject({
    // ToolHive's names. Here: how long the gateway waits for the whole answer of a call it makes
    // for itself (initialize, lists, discovery, fan-out); unset, each backend's spec.timeout.
    timeouts: z
      .strictObject({
        default: duration().optional(),
        perWorkload: z.record(z.string(), duration()).default({}),
      })
      .superRefine((timeouts, ctx) => {
        if (!isMapping(timeouts.perWorkload)) return;
        for (const name of Object.keys(timeouts.perWorkload)) {
          const problem = groupBackendProblem(index, name);
          if (problem !== null) addIssue(ctx, ['perWorkload', name], problem, 'key');
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
}
