/**
 * ToolHive's claims annotation of an MCPServer: `toolhive.stacklok.dev/authz-claims` (read under
 * `gatehouse.dev/` too), a JSON object of string values such as `{"team": "platform"}`. It says
 * who may use the server: the registry gives its entry these claims (plugins/registry/sync/
 * cluster-resource.ts), and the gateway's claims filter (gateway-filter.ts) hides the backend
 * from callers whose token does not hold them. One parser for both, so that one annotation means
 * the same to the registry and to the gateway.
 *
 * A malformed annotation is an error, never "no claims": a typo must not make a server visible
 * to everyone. The bounds keep a claim map what it is, a handful of short pairs (the registry
 * indexes each pair; the gateway compares them per caller).
 */
import type { ClaimMap } from './claims.ts';

export const ANNOTATION_PREFIXES = ['toolhive.stacklok.dev/', 'gatehouse.dev/'] as const;
export const CLAIMS_ANNOTATION_NAME = 'authz-claims';
/** The name messages give the annotation (ToolHive's). */
export const CLAIMS_ANNOTATION = `${ANNOTATION_PREFIXES[0]}${CLAIMS_ANNOTATION_NAME}`;
/** Both names the annotation is read under. */
export const CLAIMS_ANNOTATIONS: readonly string[] = ANNOTATION_PREFIXES.map((prefix) => prefix + CLAIMS_ANNOTATION_NAME);

/** A resource asks for a handful of claims, not thousands. */
export const MAX_CLAIMS = 64;
/** The most characters of a claim's name, and of its value. */
export const MAX_CLAIM_TEXT = 256;
/** How much of a refused value a message quotes. */
const MAX_QUOTED = 64;
const HAS_CONTROL = /[\x00-\x1f\x7f]/;

/** Why an annotation cannot be read as claims; the message names the annotation and says what is wrong. */
export class ClaimsAnnotationError extends Error {}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A value a resource chose, quoted and cut for a message (the cluster source's messages use it too). */
export function quote(value: string): string {
  return JSON.stringify(value.length > MAX_QUOTED ? `${value.slice(0, MAX_QUOTED)}…` : value);
}

/** What a value is, for a message that says what was expected instead. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return quote(value);
  return `${typeof value} ${String(value)}`;
}

/**
 * The claims of an annotation's value: absent or blank is no claims; anything but a JSON object
 * of bounded strings throws a ClaimsAnnotationError.
 */
export function parseClaims(annotated: string | undefined): ClaimMap {
  const key = CLAIMS_ANNOTATION;
  if (annotated === undefined || annotated.trim() === '') return {};
  const notAMap = `annotation ${key} is not a JSON object of strings`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(annotated);
  } catch (err) {
    throw new ClaimsAnnotationError(`${notAMap}: ${(err as Error).message}`);
  }
  if (!isObject(parsed)) throw new ClaimsAnnotationError(`${notAMap} (got ${describe(parsed)}), e.g. {"team": "platform"}`);
  const entries = Object.entries(parsed);
  if (entries.length > MAX_CLAIMS) throw new ClaimsAnnotationError(`annotation ${key} has ${entries.length} claims: at most ${MAX_CLAIMS}`);
  for (const [claim, value] of entries) {
    if (typeof value !== 'string') throw new ClaimsAnnotationError(`${notAMap}: claim ${quote(claim)} is ${describe(value)}`);
    if (claim === '' || claim.length > MAX_CLAIM_TEXT) throw new ClaimsAnnotationError(`${notAMap}: claim names are 1 to ${MAX_CLAIM_TEXT} characters`);
    if (value.length > MAX_CLAIM_TEXT) throw new ClaimsAnnotationError(`${notAMap}: the value of claim ${quote(claim)} is longer than ${MAX_CLAIM_TEXT} characters`);
    if (HAS_CONTROL.test(claim) || HAS_CONTROL.test(value)) throw new ClaimsAnnotationError(`${notAMap}: claim ${quote(claim)} contains control characters`);
  }
  // fromEntries defines own properties: a claim named "__proto__" stays a claim.
  return Object.fromEntries(entries as [string, string][]);
}

/**
 * The claims of an MCPServer's annotations (as written: strings), read under both prefixes; when
 * both are set they must agree. Throws a ClaimsAnnotationError.
 */
export function claimsOfAnnotations(annotations: Readonly<Record<string, string>>): ClaimMap {
  let found: { key: string; value: string } | null = null;
  for (const key of CLAIMS_ANNOTATIONS) {
    if (!Object.hasOwn(annotations, key)) continue;
    const value = annotations[key]!;
    if (found !== null && found.value !== value) throw new ClaimsAnnotationError(`annotations ${found.key} and ${key} disagree: set one of them`);
    found = { key, value };
  }
  return parseClaims(found?.value);
}
