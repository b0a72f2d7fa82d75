/**
 * `VirtualMCPServer.spec.config.rateLimiting`: ToolHive's rate limits of `tools/call`, with its
 * field names and token-bucket meaning (core/base/token-bucket.ts), plus `perClient`:
 *
 *   rateLimiting:
 *     shared:    {maxTokens: 1000, refillPeriod: 1m}   # every caller together
 *     perUser:   {maxTokens: 100, refillPeriod: 1m}    # each principal (issuer + sub); anonymous: each client address
 *     perClient: {maxTokens: 300, refillPeriod: 1m}    # each OAuth client id (Gatehouse extension)
 *     tools:                                           # on top, for calls of one tool (its name as clients call it)
 *       - name: github_create_pr
 *         shared:  {maxTokens: 10, refillPeriod: 1m}
 *         perUser: {maxTokens: 2, refillPeriod: 1m}
 *     workloads:                                       # on top, for calls of any tool of one backend (Gatehouse extension)
 *       - workload: github
 *         perUser: {maxTokens: 20, refillPeriod: 1m}
 *
 * A bucket holds at most `maxTokens` (the burst) and refills from empty in `refillPeriod`. A call
 * takes a token from every bucket that applies, or from none. Unlike ToolHive, per-user limits
 * apply to anonymous callers too (keyed by their address), and Redis is not required: without
 * Redis session storage each replica counts alone.
 */
import { z } from 'zod';
import type { RateBound } from '../base/rate-limit.ts';
import { durationSchema as duration } from './duration.ts';
import { addIssue, q, text, uniqueNames, whenMapping } from './formats.ts';
import { groupBackendProblem, type ReferenceIndex, type SchemaContext } from './schema-parts.ts';

export interface ToolRateLimit {
  /** The tool's name as clients call it (an aggregated group: its prefixed or overridden name). */
  readonly name: string;
  readonly shared: RateBound | null;
  readonly perUser: RateBound | null;
}

export interface WorkloadRateLimit {
  /** The backend (MCPServer) whose tools' calls it counts. */
  readonly workload: string;
  readonly shared: RateBound | null;
  readonly perUser: RateBound | null;
}

/** Resolved `spec.config.rateLimiting` (null in VmcpConfig when absent). */
export interface RateLimitConfig {
  readonly shared: RateBound | null;
  readonly perUser: RateBound | null;
  readonly perClient: RateBound | null;
  readonly tools: readonly ToolRateLimit[];
  readonly workloads: readonly WorkloadRateLimit[];
}

/** The longest refillPeriod: a bucket is a rate, not a quota (a day's bound belongs to billing). */
const MAX_REFILL_PERIOD_MS = 24 * 3_600_000;

const bucket = z.strictObject({
  maxTokens: z.int().min(1).max(1_000_000_000),
  refillPeriod: duration().superRefine((ms, ctx) => {
    if (ms > MAX_REFILL_PERIOD_MS) ctx.addIssue('must be at most 24h');
  }),
});

const toolLimit = z
  .strictObject({ name: text, shared: bucket.optional(), perUser: bucket.optional() })
  .superRefine((tool, ctx) => {
    if (tool.shared === undefined && tool.perUser === undefined) addIssue(ctx, ['name'], `tool ${q(tool.name)} needs shared or perUser (or both): it limits nothing`, 'key');
  }, whenMapping);

/** `workloads[]` (Gatehouse extension): the calls of one backend's tools, whatever the tool. */
function workloadLimit(index: ReferenceIndex) {
  const workload = text.superRefine((name, ctx) => {
    const problem = groupBackendProblem(index, name);
    if (problem !== null) ctx.addIssue(problem);
  });
  return z
    .strictObject({ workload, shared: bucket.optional(), perUser: bucket.optional() })
    .superRefine((entry, ctx) => {
      if (entry.shared === undefined && entry.perUser === undefined) addIssue(ctx, ['workload'], `workload ${q(entry.workload)} needs shared or perUser (or both): it limits nothing`, 'key');
    }, whenMapping);
}

export function rateLimitingSchema(schema: SchemaContext) {
  return z
    .strictObject({
      shared: bucket.optional(),
      perUser: bucket.optional(),
      // Gatehouse extension: one bucket per OAuth client (the token's client_id, else azp).
      perClient: bucket.optional(),
      tools: uniqueNames('tool', z.array(toolLimit)).default([]),
      workloads: z.array(workloadLimit(schema.index)).default([]),
    })
    .superRefine((limits, ctx) => {
      if (limits.shared === undefined && limits.perUser === undefined && limits.perClient === undefined && limits.tools.length === 0 && limits.workloads.length === 0) {
        addIssue(ctx, [], 'needs at least one of shared, perUser, perClient, tools or workloads', 'key');
      }
      const seen = new Map<string, number>();
      limits.workloads.forEach((entry, i) => {
        const first = seen.get(entry.workload);
        if (first !== undefined) addIssue(ctx, ['workloads', i, 'workload'], `${q(entry.workload)} is already limited in workloads[${first}]: merge the two entries`);
        else seen.set(entry.workload, i);
      });
      if (limits.perClient !== undefined && schema.index.anonymousIncoming) {
        addIssue(ctx, ['perClient'], 'needs incomingAuth type oidc: anonymous callers have no OAuth client id', 'key');
      }
    }, whenMapping);
}

type RateLimitingInput = z.output<ReturnType<typeof rateLimitingSchema>>;
type BucketInput = z.output<typeof bucket>;

const toBound = (input: BucketInput | undefined): RateBound | null => (input === undefined ? null : { maxTokens: input.maxTokens, refillPeriodMs: input.refillPeriod });

export function toRateLimiting(input: RateLimitingInput | undefined): RateLimitConfig | null {
  if (input === undefined) return null;
  return {
    shared: toBound(input.shared),
    perUser: toBound(input.perUser),
    perClient: toBound(input.perClient),
    tools: input.tools.map((tool) => ({ name: tool.name, shared: toBound(tool.shared), perUser: toBound(tool.perUser) })),
    workloads: input.workloads.map((entry) => ({ workload: entry.workload, shared: toBound(entry.shared), perUser: toBound(entry.perUser) })),
  };
}
