/**
 * The parts of Cedar authorization both places of policies share: the `spec.incomingAuth.authzConfig`
 * of a VirtualMCPServer (authz-schema.ts) and ToolHive's authorization file (authz-file.ts). The
 * core knows their shapes and ToolHive's names; what Cedar makes of the text (the policies'
 * syntax, the entity store, the entity types and actions the policies name) is checked by the
 * `AuthzPolicyChecks` the composition root gives validation (the cedar-authz plugin's), and each
 * problem it finds is put at its character in the file.
 */
import { z } from 'zod';
import { addIssue, q, text, type Ctx } from './formats.ts';
import type { PathSegment } from './problems.ts';

/** ToolHive's default group entity type (`EntityTypeTHVGroup`). */
export const DEFAULT_GROUP_ENTITY_TYPE = 'THVGroup';

/** What Cedar's checks are given: ToolHive's policy set and the entity type of the group parents. */
export interface AuthzPolicySet {
  readonly policies: readonly string[];
  readonly entitiesJson: string;
  readonly groupEntityType: string;
}

/** A problem Cedar found in the text of a policy set. */
export interface AuthzTextProblem {
  /** Which text: a policy (its index), or the entity store. */
  readonly target: { readonly policy: number } | 'entitiesJson';
  /** Where in that text, in UTF-16 code units; null when the problem has no position. */
  readonly offset: number | null;
  readonly message: string;
}

/**
 * Checks of Cedar text the core cannot make: given to validation by the composition root (the
 * `gatehouse` command gives the cedar-authz plugin's). Without them the shapes are checked and
 * the policies are parsed when the plugin starts.
 */
export interface AuthzPolicyChecks {
  /** The problems of a policy set: syntax, the entity store, entity types and actions no request has. */
  check(set: AuthzPolicySet): AuthzTextProblem[];
  /** Why `type` cannot be the group entity type (not a Cedar identifier), or null. */
  entityType(type: string): string | null;
}

/** Cedar's problems of a policy set, each added at its text's YAML path (a policy's item, the entity store). */
export function addPolicySetIssues(ctx: Ctx, checks: AuthzPolicyChecks, set: AuthzPolicySet, paths: { policies: PathSegment[]; entitiesJson: PathSegment[] }): void {
  for (const problem of checks.check(set)) {
    if (problem.target === 'entitiesJson') addInsideIssue(ctx, paths.entitiesJson, set.entitiesJson, problem);
    else addInsideIssue(ctx, [...paths.policies, problem.target.policy], set.policies[problem.target.policy] ?? '', problem);
  }
}

/** The group entity type Cedar refuses, at `path`. */
export function addEntityTypeIssue(ctx: Ctx, checks: AuthzPolicyChecks, type: unknown, path: PathSegment[]): void {
  if (typeof type !== 'string' || type === '' || type.includes('::')) return;
  const problem = checks.entityType(type);
  if (problem !== null) addIssue(ctx, path, problem);
}

/** 1-based line and column of a UTF-16 offset in `value`: the fallback when the file position cannot be known. */
export function lineColumnIn(value: string, offset: number): { line: number; column: number } {
  const before = value.slice(0, Math.max(0, offset));
  const lines = before.split('\n');
  return { line: lines.length, column: (lines[lines.length - 1] ?? '').length + 1 };
}

/**
 * A problem at a character of the string value at `path`: the file position of that character
 * when it can be known (the issue's `params.inside`), else the value's, with `line L col C` inside
 * it in the message.
 */
export function addInsideIssue(ctx: Ctx, path: PathSegment[], value: string, problem: AuthzTextProblem): void {
  if (problem.offset === null) {
    addIssue(ctx, path, problem.message);
    return;
  }
  const inside = { offset: problem.offset, ...lineColumnIn(value, problem.offset) };
  ctx.addIssue({ code: 'custom', path, message: problem.message, params: { at: 'value', inside } });
}

/** ToolHive's policies: at least one, one policy per string. */
export const policiesSchema = z
  .array(z.string(), { error: (issue) => (issue.input === undefined ? undefined : 'must be a list of Cedar policies, one policy per string') })
  .min(1, { error: 'must list at least one policy: with none, every request is denied' });

/** A claim name (ToolHive: at most 253 characters; a dot path such as `realm_access.roles` reads a nested claim). */
export const claimName = z.string().max(253);

/** ToolHive's `validateGroupEntityType`: an entity type without a namespace; Cedar's checks say whether it is an identifier. */
export const groupEntityType = z
  .string()
  .max(63)
  .superRefine((type, ctx) => {
    if (type.includes('::')) ctx.addIssue(`must not contain "::": namespaced entity types are not supported, as in ToolHive (got ${q(type)})`);
  });

export const multiValuedClaims = z.array(text);

/** `primaryUpstreamProvider`: refused, with the reason. */
export const unsupportedUpstream = (field: string) =>
  z.string().superRefine((_, ctx) => {
    ctx.addIssue(`is not supported yet: ${field} takes the claims of an upstream provider's token; Gatehouse's Cedar authorizer reads the claims of the token the client presented`);
  });

/** The claim mapping of a policy set, with ToolHive's defaults (no group claim but the well-known ones, no role claim, THVGroup). */
export interface ClaimMappingFields {
  readonly groupClaimName: string;
  readonly roleClaimName: string;
  readonly groupEntityType: string;
  readonly multiValuedClaims: readonly string[];
}

/** Strings only: a list whose items are not all strings is not checked by Cedar (its schema problem says why). */
export function stringList(value: unknown): string[] | null {
  return Array.isArray(value) && value.every((item) => typeof item === 'string') ? value : null;
}
