/**
 * ToolHive's Cedar request for one MCP operation (pkg/authz/authorizers/cedar/core.go,
 * `AuthorizeWithJWTClaims` and `authorizeToolCall` / `authorizePromptGet` /
 * `authorizeResourceRead`; entity.go, `CreateEntitiesForRequest`), built the same way so that
 * ToolHive's policies decide here as they do there:
 *
 * - principal `Client::"<sub>"` (no string `sub` claim: no request, so a deny); attributes: every
 *   claim as `claim_<name>`, plus `claimset_<name>` for the multi-valued claims; parents: the
 *   group claim's strings and the role claim's, deduplicated, as `<groupEntityType>::"<g>"`.
 * - action `Action::"call_tool" | "get_prompt" | "read_resource"` with `{operation: <id>}`.
 * - resource `Tool::"<name>"` `{name, operation: "call", feature: "tool"}` over the arguments over
 *   the tool's annotations; `Prompt::"<name>"` `{name, operation: "get", feature: "prompt"}` under
 *   the arguments; `Resource::"<uri>"` `{name: uri, uri, operation: "read", feature: "resource"}`
 *   under the arguments. Parent `MCP::"<serverName>"` when a server name is set.
 * - context: every `claim_*` (and `claimset_*`) and every `arg_*`.
 *
 * Arguments: a string, boolean or number is `arg_<name>`; anything else (null, a list, an object)
 * is `arg_<name>_present: true`. Values are converted as in values.ts (numbers are decimals).
 */
import type { CedarValueJson, EntityJson, TypeAndId } from '@cedar-policy/cedar-wasm/nodejs';
import { cedarRecord, wellFormed } from './values.ts';

export type CedarAction = 'call_tool' | 'get_prompt' | 'read_resource';

/** The MCP tool annotations ToolHive copies onto a Tool resource (from the server's tools/list, never the client). */
export interface ToolAnnotations {
  readonly readOnlyHint?: boolean;
  readonly destructiveHint?: boolean;
  readonly idempotentHint?: boolean;
  readonly openWorldHint?: boolean;
}

/** How claims become the principal (the claim-mapping fields of the config). */
export interface ClaimMapping {
  /** The group claim; tried before the well-known names. Empty: only those. */
  readonly groupClaimName: string;
  /** The role claim, also mapped to group parents. Empty: none. */
  readonly roleClaimName: string;
  /** The entity type of the group parents (default THVGroup). */
  readonly groupEntityType: string;
  /** Claims exposed as a space-joined `claim_<name>` string and a `claimset_<name>` Set. */
  readonly multiValuedClaims: readonly string[];
  /** The parent `MCP::"<serverName>"` of every resource; empty: no parent. */
  readonly serverName: string;
}

export interface CedarRequest {
  readonly principal: TypeAndId;
  readonly action: TypeAndId;
  readonly resource: TypeAndId;
  readonly context: Record<string, CedarValueJson>;
  /** The principal, action and resource entities (the static store is added by the engine). */
  readonly entities: EntityJson[];
}

/** ToolHive's `defaultGroupClaimNames`, tried in order when the configured group claim is absent. */
export const DEFAULT_GROUP_CLAIMS = ['groups', 'roles', 'cognito:groups'] as const;

const RESOURCE_TYPES: Readonly<Record<CedarAction, string>> = { call_tool: 'Tool', get_prompt: 'Prompt', read_resource: 'Resource' };

/** ToolHive's `resolveNestedClaim`: the top-level key as is (URL claim names hold dots), else a dot path through objects. */
function nestedClaim(claims: Readonly<Record<string, unknown>>, path: string): unknown {
  if (path === '') return undefined;
  if (Object.hasOwn(claims, path)) return claims[path];
  const parts = path.split('.');
  if (parts.length < 2) return undefined;
  let current: unknown = claims;
  for (const part of parts) {
    if (typeof current !== 'object' || current === null || Array.isArray(current) || !Object.hasOwn(current, part)) return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

/** ToolHive's `extractGroups`: the strings of a list claim; null when absent or not a list (an empty list is not null). */
function groupsOf(claims: Readonly<Record<string, unknown>>, name: string): string[] | null {
  const value = nestedClaim(claims, name);
  if (value === undefined || value === null || !Array.isArray(value)) return null;
  return value.filter((item): item is string => typeof item === 'string');
}

/** The principal's group names: the group claim (else the first well-known one present) and the role claim, deduplicated. */
export function principalGroups(claims: Readonly<Record<string, unknown>>, mapping: ClaimMapping): string[] {
  let groups = groupsOf(claims, mapping.groupClaimName);
  for (const name of DEFAULT_GROUP_CLAIMS) {
    if (groups !== null) break;
    groups = groupsOf(claims, name);
  }
  return [...new Set([...(groups ?? []), ...(groupsOf(claims, mapping.roleClaimName) ?? [])])];
}

/** The string elements of a multi-valued claim (`multiValuedTokens`, `strings.Fields`); null for another type. */
function multiValuedTokens(value: unknown): string[] | null {
  if (typeof value === 'string') return value.split(/\s+/u).filter((token) => token !== '');
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === 'string');
  return null;
}

/**
 * The attribute names the policies read (references.ts), or null for all: Cedar reads an attribute
 * only by its name, so leaving out the others changes no decision and saves marshalling them
 * into the wasm instance on every call.
 */
export type AttributeFilter = ReadonlySet<string> | null;

const kept = (only: AttributeFilter, name: string): boolean => only === null || only.has(name);

/** The claims as Cedar attributes: `claim_<name>` for each, `claimset_<name>` for the multi-valued ones. */
export function claimAttributes(claims: Readonly<Record<string, unknown>>, multiValued: readonly string[], only: AttributeFilter = null): Record<string, CedarValueJson> {
  const prefixed: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(claims)) if (kept(only, `claim_${name}`)) prefixed[`claim_${name}`] = value;
  for (const name of multiValued) {
    if (!Object.hasOwn(claims, name)) continue;
    const value = claims[name];
    // A list is joined with spaces; a string passes unchanged; another type is left as it is.
    if (Array.isArray(value) && kept(only, `claim_${name}`)) prefixed[`claim_${name}`] = (multiValuedTokens(value) ?? []).join(' ');
    const tokens = multiValuedTokens(value);
    if (tokens !== null && kept(only, `claimset_${name}`)) prefixed[`claimset_${name}`] = tokens;
  }
  return cedarRecord(prefixed, 0);
}

/** ToolHive's `preprocessArguments`: scalars as `arg_<name>`, anything else as `arg_<name>_present: true`. */
export function argumentAttributes(args: Readonly<Record<string, unknown>> | null | undefined, only: AttributeFilter = null): Record<string, CedarValueJson> {
  if (args === null || args === undefined) return {};
  const prefixed: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(args)) {
    const scalar = typeof value === 'string' || typeof value === 'boolean' || typeof value === 'number';
    const key = scalar ? `arg_${name}` : `arg_${name}_present`;
    if (kept(only, key)) prefixed[key] = scalar ? value : true;
  }
  return cedarRecord(prefixed, 0);
}

/** ToolHive's `AnnotationsToMap`: the four hints that are set. */
function annotationAttributes(annotations: ToolAnnotations | undefined): Record<string, CedarValueJson> {
  const out: Record<string, CedarValueJson> = {};
  if (annotations === undefined) return out;
  for (const key of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const) {
    const value = annotations[key];
    if (typeof value === 'boolean') out[key] = value;
  }
  return out;
}

/** The resource's attributes, merged in ToolHive's order (later wins). */
function resourceAttributes(action: CedarAction, id: string, args: Record<string, CedarValueJson>, annotations: ToolAnnotations | undefined): Record<string, CedarValueJson> {
  switch (action) {
    case 'call_tool':
      return { ...annotationAttributes(annotations), ...args, name: id, operation: 'call', feature: 'tool' };
    case 'get_prompt':
      return { name: id, operation: 'get', feature: 'prompt', ...args };
    case 'read_resource':
      return { name: id, uri: id, operation: 'read', feature: 'resource', ...args };
  }
}

/** The subject ToolHive makes the principal: the `sub` claim, a non-empty string; null otherwise (a deny). */
export function subjectOf(claims: Readonly<Record<string, unknown>>): string | null {
  const sub = claims.sub;
  return typeof sub === 'string' && sub !== '' ? wellFormed(sub) : null;
}

/**
 * The Cedar request of `action` on `resourceId` (a tool or prompt name, a resource URI) by the
 * holder of `claims`; null when the claims have no subject (ToolHive's ErrMissingPrincipal: deny).
 * `only`: the `claim_*`/`claimset_*`/`arg_*` attributes to include (null: all, ToolHive's request).
 */
export function buildRequest(
  mapping: ClaimMapping,
  claims: Readonly<Record<string, unknown>>,
  action: CedarAction,
  resourceId: string,
  args?: Readonly<Record<string, unknown>> | null,
  annotations?: ToolAnnotations,
  only: AttributeFilter = null,
): CedarRequest | null {
  const sub = subjectOf(claims);
  if (sub === null) return null;
  const claimAttrs = claimAttributes(claims, mapping.multiValuedClaims, only);
  const argAttrs = argumentAttributes(args, only);
  const principal = { type: 'Client', id: sub };
  const actionUid = { type: 'Action', id: action };
  const resource = { type: RESOURCE_TYPES[action], id: wellFormed(resourceId) };
  const parents = principalGroups(claims, mapping).map((group) => ({ type: mapping.groupEntityType, id: wellFormed(group) }));
  return {
    principal,
    action: actionUid,
    resource,
    context: { ...claimAttrs, ...argAttrs },
    entities: [
      { uid: principal, attrs: claimAttrs, parents },
      { uid: actionUid, attrs: { operation: action }, parents: [] },
      { uid: resource, attrs: resourceAttributes(action, resource.id, argAttrs, annotations), parents: mapping.serverName === '' ? [] : [{ type: 'MCP', id: mapping.serverName }] },
    ],
  };
}
