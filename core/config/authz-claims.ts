/**
 * Claims in the vMCP configuration: who may see and use a backend and its items, for the claims
 * filter of per-user tool policy (plugins/registry-authz/gateway-filter.ts). Core checks their
 * shape and carries them to plugins (BackendInfo.annotations, BackendInfo.authzClaims); what they
 * mean is the plugin's.
 *
 * - An MCPServer's annotation `toolhive.stacklok.dev/authz-claims` (or `gatehouse.dev/authz-claims`):
 *   ToolHive's, JSON text of a claim map, the backend's claims.
 * - `spec.config.aggregation.tools[].authzClaims` (Gatehouse extension): per tool, prompt and
 *   resource of that workload, `{tools: {<backend's own name>: {claim: value}}, prompts: {...},
 *   resources: {<uri>: {...}}}`.
 *
 * A claim map is flat: claim name → the one string a caller's token must hold under that name
 * (its array claim holds it when an element equals it). The bounds are the registry's for an
 * entry's claims (plugins/registry-authz/claims-annotation.ts, the parser the plugin reads the
 * annotation with): what validate accepts here, that parser accepts, and the reverse
 * (test/claims-filter/config.test.ts holds the two to one verdict).
 */
import { z } from 'zod';
import { addIssue, q, whenMapping, type Ctx } from './formats.ts';
import { didYouMean, type PathSegment } from './problems.ts';
import { isMapping } from './yaml.ts';

/** The annotation's names, ToolHive's first (the one messages name). */
export const CLAIMS_ANNOTATIONS = ['toolhive.stacklok.dev/authz-claims', 'gatehouse.dev/authz-claims'] as const;

const MAX_CLAIMS = 64;
const MAX_CLAIM_TEXT = 256;
const MAX_QUOTED = 64;
const HAS_CONTROL = /[\x00-\x1f\x7f]/;

function quote(value: string): string {
  return q(value.length > MAX_QUOTED ? `${value.slice(0, MAX_QUOTED)}…` : value);
}

/** A JSON value as the annotation's messages name it (as the registry's parser does). */
function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return quote(value);
  return `${typeof value} ${String(value)}`;
}

/** Why one claim (name, value) cannot be required of a caller, or null. */
function claimProblem(name: string, value: string): string | null {
  if (name === '' || name.length > MAX_CLAIM_TEXT) return `claim names are 1 to ${MAX_CLAIM_TEXT} characters`;
  if (value.length > MAX_CLAIM_TEXT) return `the value of claim ${quote(name)} is longer than ${MAX_CLAIM_TEXT} characters`;
  if (HAS_CONTROL.test(name) || HAS_CONTROL.test(value)) return `claim ${quote(name)} contains control characters`;
  return null;
}

// ---- the annotation ---------------------------------------------------------------------------

/** Why an annotation's text is not a claim map, or null (blank is no claims). */
export function claimsAnnotationProblem(text: string): string | null {
  if (text.trim() === '') return null;
  const notAMap = 'is not a JSON object of strings';
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return `${notAMap}: ${(err as Error).message}`;
  }
  if (!isMapping(parsed)) return `${notAMap} (got ${describe(parsed)}), e.g. {"team": "platform"}`;
  const entries = Object.entries(parsed);
  if (entries.length > MAX_CLAIMS) return `has ${entries.length} claims: at most ${MAX_CLAIMS}`;
  for (const [name, value] of entries) {
    if (typeof value !== 'string') return `${notAMap}: claim ${quote(name)} is ${describe(value)}`;
    const problem = claimProblem(name, value);
    if (problem !== null) return `${notAMap}: ${problem}`;
  }
  return null;
}

/**
 * An MCPServer's `metadata.annotations`: the claims annotation must be a claim map, and when it
 * is written under both names the two must agree. Other annotations are the operator's own.
 */
export function claimsAnnotationIssues(annotations: unknown, ctx: Ctx): void {
  if (!isMapping(annotations)) return;
  let first: { key: string; value: string } | null = null;
  for (const key of CLAIMS_ANNOTATIONS) {
    if (!Object.hasOwn(annotations, key)) continue;
    const value = annotations[key];
    if (typeof value !== 'string') continue; // the map's own schema says so
    const problem = claimsAnnotationProblem(value);
    if (problem !== null) {
      addIssue(ctx, [key], problem);
      return;
    }
    if (first !== null && first.value !== value) addIssue(ctx, [key], `disagrees with annotation ${first.key}: set one of them`);
    first ??= { key, value };
  }
}

// ---- authzClaims in the aggregation config ---------------------------------------------------

/**
 * A YAML mapping whose keys are names, read without losing a key named `__proto__` silently (a
 * zod record would make it the object's prototype, and the name's claims would be gone: that
 * item would be open to everyone). Such a key is refused instead.
 */
function ownMap<T extends z.ZodType>(values: T) {
  return z.preprocess((input, ctx) => {
    if (isMapping(input) && Object.hasOwn(input, '__proto__')) {
      ctx.addIssue({ code: 'custom', path: ['__proto__'], message: '"__proto__" cannot be configured here (it is not a name the gateway can keep apart)', params: { at: 'key' } });
    }
    return input;
  }, z.record(z.string(), values));
}

function claimMapIssues(map: Readonly<Record<string, unknown>>, ctx: Ctx): void {
  const entries = Object.entries(map);
  if (entries.length === 0) addIssue(ctx, [], 'names no claim: an item with no claims is seen by every caller, so write the claims a caller must hold, or remove the entry');
  if (entries.length > MAX_CLAIMS) addIssue(ctx, [], `has ${entries.length} claims: at most ${MAX_CLAIMS}`);
  for (const [name, value] of entries) {
    if (typeof value !== 'string') continue; // the value's own schema says so
    const problem = claimProblem(name, value);
    if (problem !== null) addIssue(ctx, [name], problem, name === '' ? 'key' : 'value');
  }
}

const claimValue = z.string({
  error: (issue) => {
    if (Array.isArray(issue.input)) return 'must be one string: a claim map requires one value per claim (a caller whose token claim is a list holds it when one element equals it)';
    if (typeof issue.input === 'number' || typeof issue.input === 'boolean') return `must be a string (got ${String(issue.input)}): claims are compared as strings, and a token claim held as a number or boolean never matches`;
    return undefined;
  },
});

const claimMap = ownMap(claimValue).superRefine(claimMapIssues, whenMapping);

function namesIssues(map: Readonly<Record<string, unknown>>, ctx: Ctx): void {
  if (Object.hasOwn(map, '')) addIssue(ctx, [''], 'must not be empty: name the item by its backend\'s own name (a resource by its URI)', 'key');
}

const itemMap = ownMap(claimMap).superRefine(namesIssues, whenMapping).default({});

/** `tools[].authzClaims`: claims per item of the workload, each map by the backend's own names. */
export const authzClaimsSchema = z.strictObject({ tools: itemMap, prompts: itemMap, resources: itemMap });

export type AuthzClaimsInput = z.output<typeof authzClaimsSchema>;

/**
 * A tool `authzClaims` names that the workload's own rules never serve: not in its `filter`,
 * or in its `exclude`, or named by the name an override gives it (claims name a tool by the
 * backend's own name). Such claims restrict nothing, and the likely cause is a typo whose real
 * tool then has no claims at all: refused, not warned about (validate has no warnings, and a
 * warning at start is read too late).
 */
export function unservedToolIssues(entry: unknown, at: readonly PathSegment[], ctx: Ctx): void {
  // Checked even when other fields of the entry are invalid: read each one only when it has its shape.
  if (!isMapping(entry) || !isMapping(entry.authzClaims) || !isMapping(entry.authzClaims.tools)) return;
  const filter = Array.isArray(entry.filter) ? (entry.filter as unknown[]).filter((name) => typeof name === 'string') : null;
  const exclude = Array.isArray(entry.exclude) ? (entry.exclude as unknown[]) : [];
  const overrides = isMapping(entry.overrides) ? entry.overrides : {};
  const renamed = new Map<string, string>();
  for (const [original, override] of Object.entries(overrides)) {
    if (isMapping(override) && typeof override.name === 'string') renamed.set(override.name, original);
  }
  for (const tool of Object.keys(entry.authzClaims.tools)) {
    if (tool === '' || tool === '__proto__') continue; // refused as such
    const path = [...at, 'authzClaims', 'tools', tool];
    const original = renamed.get(tool);
    if (original !== undefined && !Object.hasOwn(overrides, tool)) {
      addIssue(ctx, path, `is the name overrides give ${q(original)}: authzClaims names a tool by the backend's own name, ${q(original)}`, 'key');
    } else if (filter !== null && !filter.includes(tool)) {
      addIssue(ctx, path, `is not in this workload's filter${didYouMean(tool, filter)}, so it is never served and its claims restrict nothing: fix the name or remove its claims`, 'key');
    } else if (exclude.includes(tool)) {
      addIssue(ctx, path, "is in this workload's exclude, so it is never served and its claims restrict nothing: remove its claims or the exclude", 'key');
    }
  }
}
