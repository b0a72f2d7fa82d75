/**
 * What a JSON schema validation found, as problems a publisher can act on: each names the JSON
 * path of the value at fault (a JSON Pointer: `/packages/0/version`) and says what is expected,
 * once. Ajv's errors are worded for programs: "must have required property 'url'" at the object,
 * "must NOT be valid" for a forbidden value, a line per failed branch of a union. These become
 * `/remotes/0/url: is required`, `/packages/0/version: must not be "latest"`, and one line for a
 * union of required properties (`/packages/0/packageArguments/0: needs "valueHint" or "value"`).
 * Unions told apart by `type` report only their matching branch once the schema went through
 * discriminated-unions.ts.
 */
import type { ErrorObject } from 'ajv';

export interface DocumentProblem {
  /** JSON Pointer of the value at fault (`` for the document itself). */
  readonly path: string;
  readonly message: string;
}

export function describeProblem(problem: DocumentProblem): string {
  return `${problem.path === '' ? '/' : problem.path}: ${problem.message}`;
}

function pointerToken(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

const q = (value: unknown): string => JSON.stringify(value);

function quoteAll(values: readonly unknown[]): string {
  return values.map(q).join(', ');
}

/** The message of one error that stands on its own (not a union's summary or branch). */
function problemOf(error: ErrorObject): DocumentProblem {
  const path = error.instancePath;
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return { path: `${path}/${pointerToken(String(params.missingProperty))}`, message: 'is required' };
    case 'additionalProperties':
      return { path: `${path}/${pointerToken(String(params.additionalProperty))}`, message: 'is not allowed here' };
    case 'enum':
      return { path, message: `must be one of ${quoteAll(params.allowedValues as unknown[])}` };
    case 'const':
      return { path, message: `must be ${q(params.allowedValue)}` };
    case 'not': {
      const forbidden = error.schema as { const?: unknown } | undefined;
      if (forbidden !== undefined && 'const' in forbidden) return { path, message: `must not be ${q(forbidden.const)}` };
      return { path, message: 'is not allowed' };
    }
    default:
      return { path, message: error.message ?? `fails the ${error.keyword} rule` };
  }
}

/**
 * The problems of a failed validation (ajv compiled with `allErrors` and `verbose`), in the order
 * ajv found them, without repeats.
 */
export function schemaProblems(errors: readonly ErrorObject[]): DocumentProblem[] {
  const skip = new Set<ErrorObject>();
  const extra = new Map<ErrorObject, DocumentProblem>();
  for (const error of errors) {
    if (error.keyword === 'if') skip.add(error);
    if (error.keyword !== 'anyOf' && error.keyword !== 'oneOf') continue;
    // The branches of this union: errors at the same value from inside its schema.
    const prefix = `${error.schemaPath}/`;
    const branches = errors.filter((e) => e !== error && e.instancePath === error.instancePath && e.schemaPath.startsWith(prefix));
    if (branches.length > 0 && branches.every((e) => e.keyword === 'required')) {
      for (const branch of branches) skip.add(branch);
      const names = [...new Set(branches.map((e) => String((e.params as { missingProperty?: unknown }).missingProperty)))];
      extra.set(error, { path: error.instancePath, message: `needs ${names.map(q).join(' or ')}` });
    } else if (branches.length > 0) {
      // The branches say what is wrong; the summary adds nothing.
      skip.add(error);
    }
  }
  const problems: DocumentProblem[] = [];
  const seen = new Set<string>();
  for (const error of errors) {
    if (skip.has(error)) continue;
    const problem = extra.get(error) ?? problemOf(error);
    const key = describeProblem(problem);
    if (seen.has(key)) continue;
    seen.add(key);
    problems.push(problem);
  }
  return problems;
}
