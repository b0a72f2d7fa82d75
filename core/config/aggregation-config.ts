/**
 * The settings of an aggregated virtual MCP server (a group of several backends), resolved from
 * `VirtualMCPServer.spec.config.aggregation`, `.session` and `.operational`. Field names follow
 * ToolHive's vMCP so that its users find what they know:
 *
 *   aggregation:
 *     conflictResolution: prefix          # prefix (default) | priority | manual
 *     conflictResolutionConfig:
 *       prefixFormat: "{workload}_"       # {workload} is the MCPServer name
 *       priorityOrder: [github, jira]     # priority: earlier backends keep the bare name
 *     tools:                              # per-backend filters and renames
 *       - workload: github
 *         filter: [create_pr, list_issues]  # only these (omit for all)
 *         exclude: [delete_repo]            # never these
 *         overrides:
 *           create_pr: {name: gh_create_pr, description: "Open a pull request"}
 *     pageSize: 0                         # list page size toward the client (0: one page)
 *   session:
 *     ttl: 30m                            # sliding
 *     maxSessions: 10000                  # LRU bound per process
 *     maxSessionsPerPrincipal: 100        # one principal's oldest session goes beyond it
 *     maxSessionSize: 64Ki                # the client's capabilities a session keeps, as JSON
 *     maxSessionsSizePerPrincipal: 1Mi    # one principal's sessions in all; its oldest go beyond it
 *     storage: {type: memory}             # or {type: redis, redis: {...}} to share across replicas
 *   operational:
 *     timeouts:                           # the whole answer of a call the gateway makes for itself
 *       default: 30s                      # unset: each backend's spec.timeout
 *       perWorkload: {slow-backend: 2m}
 *     maxBackendResponseSize: 32Mi        # one answer, and one event of any stream (Gatehouse's)
 *     failureHandling:
 *       partialFailureMode: bestEffort    # bestEffort (default) | fail
 *       healthCheckInterval: 30s          # 0s: off
 *       unhealthyThreshold: 3
 */
import type { RedisConnectionConfig } from './redis-config.ts';

export type ConflictResolution = 'prefix' | 'priority' | 'manual';

export interface ToolOverride {
  readonly name: string | null;
  readonly description: string | null;
}

export interface WorkloadTools {
  /** Only these tools of the backend (null: all). */
  readonly filter: readonly string[] | null;
  readonly exclude: readonly string[];
  /** Original tool name → what the client sees. */
  readonly overrides: Readonly<Record<string, ToolOverride>>;
}

export interface AggregationConfig {
  readonly conflictResolution: ConflictResolution;
  readonly prefixFormat: string;
  readonly priorityOrder: readonly string[];
  /** Backend name → its filters and renames. */
  readonly tools: Readonly<Record<string, WorkloadTools>>;
  readonly pageSize: number;
}

export type SessionStorageConfig = { readonly type: 'memory' } | { readonly type: 'redis'; readonly redis: RedisConnectionConfig };

export interface SessionConfig {
  readonly ttlMs: number;
  readonly maxSessions: number;
  /** Sessions one principal may hold; creating one more ends its oldest (anonymous sessions are not counted). */
  readonly maxSessionsPerPrincipal: number;
  /**
   * `maxSessionSize`: the most a session keeps of what its client declares (its capabilities, as
   * JSON); an initialize or a 2026-07-28 request declaring more is refused (-32602).
   */
  readonly maxSessionBytes: number;
  /**
   * `maxSessionsSizePerPrincipal`: the bytes one principal's sessions may hold in all (their
   * records as stored, JSON); creating one more ends its oldest (anonymous sessions are not counted).
   */
  readonly maxSessionsBytesPerPrincipal: number;
  readonly storage: SessionStorageConfig;
}

export interface FailureHandlingConfig {
  readonly partialFailureMode: 'bestEffort' | 'fail';
  /** 0: no periodic health checks. */
  readonly healthCheckIntervalMs: number;
  readonly unhealthyThreshold: number;
}

export const DEFAULT_AGGREGATION: AggregationConfig = {
  conflictResolution: 'prefix',
  prefixFormat: '{workload}_',
  priorityOrder: [],
  tools: {},
  pageSize: 0,
};

/** The prefix of a backend's names under `prefixFormat`. */
export function prefixFor(format: string, backend: string): string {
  return format.replaceAll('{workload}', backend).replaceAll('{backend}', backend);
}

/**
 * Whether a group is served transparently (one backend, nothing to rename) or aggregated (the
 * gateway owns the session). A group a registry feeds is always aggregated, whatever its count
 * now: servers published or deleted would otherwise switch the mode, which ends every session.
 */
export function needsAggregation(backendCount: number, aggregation: AggregationConfig, registryFed = false): boolean {
  return registryFed || backendCount > 1 || Object.keys(aggregation.tools).length > 0;
}
