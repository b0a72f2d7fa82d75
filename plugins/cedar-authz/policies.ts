/**
 * The policy set and the entity store of a Cedar authorizer, checked with cedar-wasm: a problem
 * names the policy (its index in `policies`) and the line and column inside that policy's text,
 * so a config validator can put it under the YAML node of the policy (`policies[2]: line 1 col
 * 19: ...`). A checked set is preparsed into the wasm instance under an id that is a digest of its
 * text: cedar-wasm never frees a preparsed set, and a reload with the same policies replaces the
 * set of the same id instead of adding one.
 */
import { createHash } from 'node:crypto';
import { Buffer } from 'node:buffer';
import {
  checkParseEntities,
  checkParsePolicySet,
  policyToJson,
  preparsePolicySet,
  type DetailedError,
  type EntityJson,
  type PolicyJson,
} from '@cedar-policy/cedar-wasm/nodejs';

/** A problem of one policy, or of the entity store (`index` null). */
export interface PolicyProblem {
  /** The policy's index in the list; null for a problem of `entitiesJson`. */
  readonly index: number | null;
  /** 1-based, inside the policy's own text; 0 when the problem has no position. */
  readonly line: number;
  readonly column: number;
  /** The same place as an offset into the text in UTF-16 code units (what a config file's position map takes); null when there is none. */
  readonly offset: number | null;
  readonly message: string;
}

/** ToolHive's policy ids (`policy<i>`, core.go): what Cedar's diagnostics name. */
export const policyId = (index: number): string => `policy${index}`;

/** A problem's text as a config problem shows it: `line 1 col 19: message (help)`. */
export function describePolicyProblem(problem: PolicyProblem): string {
  return problem.line === 0 ? problem.message : `line ${problem.line} col ${problem.column}: ${problem.message}`;
}

/**
 * The 1-based line and column of a UTF-8 byte offset in `text` (Cedar's source locations are byte
 * offsets). The column counts characters (code points), not bytes.
 */
export function lineColumnAt(text: string, byteOffset: number): { line: number; column: number } {
  const before = Buffer.from(text, 'utf8').subarray(0, Math.max(0, byteOffset)).toString('utf8');
  const lines = before.split('\n');
  const last = lines[lines.length - 1] ?? '';
  return { line: lines.length, column: [...last].length + 1 };
}

/** The UTF-16 offset of a UTF-8 byte offset in `text` (a JavaScript string index). */
export function utf16Offset(text: string, byteOffset: number): number {
  return Buffer.from(text, 'utf8').subarray(0, Math.max(0, byteOffset)).toString('utf8').length;
}

/** Cedar's "failed to parse policy with id `policy0` from string: " prefix says nothing the index does not. */
const ID_PREFIX = /^failed to parse policy with id `[^`]*` from string: /;

function problemOf(index: number | null, text: string | null, error: DetailedError): PolicyProblem {
  const at = error.sourceLocations?.[0];
  const label = at?.label ? `: ${at.label}` : '';
  const message = `${error.message.replace(ID_PREFIX, '')}${label}${error.help ? ` (${error.help})` : ''}`;
  if (text === null || at === undefined) return { index, line: 0, column: 0, offset: null, message };
  return { index, ...lineColumnAt(text, at.start), offset: utf16Offset(text, at.start), message };
}

/**
 * The problems of a list of policies, one policy per string as ToolHive reads them (a string
 * with two policies, or none, is a problem). Each policy is checked alone, so every problem has
 * its index without reading it back out of Cedar's message; all of them are reported at once.
 */
export function checkPolicies(policies: readonly string[]): PolicyProblem[] {
  const problems: PolicyProblem[] = [];
  policies.forEach((text, index) => {
    const answer = checkParsePolicySet({ staticPolicies: { [policyId(index)]: text } });
    if (answer.type === 'failure') {
      for (const error of answer.errors) problems.push(problemOf(index, text, error));
    }
  });
  return problems;
}

/** The policies as ToolHive names them (`policy0`, `policy1`, ...): what is preparsed and evaluated. */
export function policyRecord(policies: readonly string[]): Record<string, string> {
  return Object.fromEntries(policies.map((text, index) => [policyId(index), text]));
}

/** The JSON form (Cedar's AST) of each policy, for what the engine reads of them (claims, arguments). */
export function policiesAsJson(policies: readonly string[]): PolicyJson[] {
  return policies.map((text, index) => {
    const answer = policyToJson(text);
    if (answer.type === 'failure') throw new Error(`${policyId(index)} does not parse: ${answer.errors.map((e) => e.message).join('; ')}`);
    return answer.json;
  });
}

/**
 * Preparses a checked policy set into the wasm instance; returns its id. The id is a digest of the
 * policies, so the same set is stored once however often it is loaded (cedar-wasm keeps every id
 * for the life of the process: 2000 distinct 100-policy sets held 437 MB in the trial).
 */
export function preparePolicySet(policies: readonly string[]): string {
  const id = `gatehouse-cedar-${createHash('sha256').update(JSON.stringify(policies)).digest('hex')}`;
  const answer = preparsePolicySet(id, { staticPolicies: policyRecord(policies) });
  if (answer.type === 'failure') throw new Error(`the policy set does not parse: ${answer.errors.map((e) => e.message).join('; ')}`);
  return id;
}

/** The entity store of `entitiesJson`, or the problems that keep it from being one. */
export type EntitiesResult = { ok: true; entities: EntityJson[] } | { ok: false; problems: PolicyProblem[] };

const problem = (message: string): EntitiesResult => ({ ok: false, problems: [{ index: null, line: 0, column: 0, offset: null, message }] });

/**
 * `entitiesJson` (a JSON *string*, as in ToolHive: `[{"uid": {"type": "THVGroup", "id": "eng"},
 * "attrs": {}, "parents": [...]}]`) parsed and checked by Cedar. An entity without `attrs` or
 * `parents` gets empty ones: cedar-go (ToolHive) accepts that, cedar-wasm requires both. An empty
 * string is no entities, as in ToolHive.
 */
export function parseEntities(entitiesJson: string): EntitiesResult {
  if (entitiesJson.trim() === '') return { ok: true, entities: [] };
  let value: unknown;
  try {
    value = JSON.parse(entitiesJson);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    // V8 says where: "... in JSON at position 12".
    const at = /at position (\d+)/.exec(message);
    const offset = at === null ? null : Math.min(Number(at[1]), entitiesJson.length);
    return { ok: false, problems: [{ index: null, line: 0, column: 0, offset, message: `is not JSON: ${message}` }] };
  }
  if (!Array.isArray(value)) return problem('must be a JSON list of entities: [{"uid": {"type": "THVGroup", "id": "engineering"}, "attrs": {}, "parents": []}]');
  const entities: EntityJson[] = [];
  for (const [i, item] of value.entries()) {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return problem(`entity [${i}] must be an object {uid, attrs, parents}`);
    const entity = item as Partial<EntityJson>;
    entities.push({ ...entity, uid: entity.uid!, attrs: entity.attrs ?? {}, parents: entity.parents ?? [] });
  }
  const answer = checkParseEntities({ entities });
  if (answer.type === 'failure') return { ok: false, problems: answer.errors.map((error) => problemOf(null, null, error)) };
  return { ok: true, entities };
}
