/**
 * Problems found in a configuration file, and the error that carries all of them at once.
 *
 * A problem says where (file, line, column), in which resource (`Kind/name`), at which field
 * (a YAML path such as `spec.plugins[0].config`) and what is wrong and what is expected. The
 * loaders collect every problem of a file before failing, so the user fixes them in one pass.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { StartupError } from '../base/errors.ts';

/** One step of a YAML path: a mapping key or a sequence index. */
export type PathSegment = string | number;

export interface ConfigProblem {
  /** The file as the user named it. */
  readonly file: string;
  /** 1-based line and column; 0 when the problem concerns the file as a whole (it cannot be read). */
  readonly line: number;
  readonly column: number;
  /** `Kind/name` of the resource, `document N` when its kind or name is unknown, '' for the file. */
  readonly resource: string;
  /** YAML path inside the resource (`spec.incomingAuth.resourceUrl`), '' for the resource itself. */
  readonly path: string;
  readonly message: string;
}

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** `['spec', 'plugins', 0, 'config']` → `spec.plugins[0].config`; odd keys are quoted: `backends["a.b"]`. */
export function formatPath(path: readonly PathSegment[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (PLAIN_KEY.test(segment)) out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}

/** `config.yaml:14:7 VirtualMCPServer/vmcp spec.incomingAuth.resourceUrl: must be an absolute http(s) URL` */
export function formatProblem(problem: ConfigProblem): string {
  const where = problem.line > 0 ? `${problem.file}:${problem.line}:${problem.column}` : problem.file;
  const what = [problem.resource, problem.path].filter((part) => part !== '').join(' ');
  return what === '' ? `${where}: ${problem.message}` : `${where} ${what}: ${problem.message}`;
}

/** One line per problem. */
export function formatProblems(problems: readonly ConfigProblem[]): string {
  return problems.map(formatProblem).join('\n');
}

/** Problems in reading order: by file, line, then column (stable for equal positions). */
export function sortProblems(problems: readonly ConfigProblem[]): ConfigProblem[] {
  return [...problems].sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.column - b.column);
}

/** A configuration file's outcome: the resolved config, or every problem in it (sorted by position). */
export type Validation<C> = { ok: true; config: C } | { ok: false; problems: ConfigProblem[] };

/** Validates a config file's text (as the content of `file`), at once or after loading what it names. */
export type ValidateText<C> = (text: string, file: string) => Validation<C> | Promise<Validation<C>>;

/** Reads `file` and validates its text with `validate` (a file that cannot be read is its one problem). */
export async function validateFile<C>(file: string, validate: ValidateText<C>): Promise<Validation<C>> {
  const text = await readConfigText(file);
  if (typeof text !== 'string') return { ok: false, problems: [text] };
  return validate(text, file);
}

/** The resolved config of `file`, or a ConfigError listing every problem in it. */
export async function loadFile<C>(file: string, validate: ValidateText<C>): Promise<C> {
  const result = await validateFile(file, validate);
  if (!result.ok) throw new ConfigError(result.problems);
  return result.config;
}

/** A configuration that cannot be used; `problems` lists everything that is wrong with it. */
export class ConfigError extends StartupError {
  /** Every problem, with its file position and YAML path. */
  readonly problems: readonly ConfigProblem[];

  constructor(problems: readonly ConfigProblem[]) {
    const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
    super(`invalid configuration (${count}):\n${formatProblems(problems)}`);
    this.problems = problems;
  }
}

/** A value as it appears in a message: strings quoted (and shortened), collections by their kind. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'an empty value';
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return String(value);
}

/** The candidate closest to a misspelt word, when one is close enough to be a likely typo. */
export function closestMatch(word: string, candidates: Iterable<string>): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = candidate.toLowerCase() === word.toLowerCase() ? 0 : editDistance(word, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  const tolerance = Math.max(1, Math.floor(word.length / 3));
  return best !== null && bestDistance <= tolerance ? best : null;
}

/** ` (did you mean "x"?)` or ''. */
export function didYouMean(word: string, candidates: Iterable<string>): string {
  const match = closestMatch(word, candidates);
  return match === null ? '' : ` (did you mean ${JSON.stringify(match)}?)`;
}

const EXPECTED: Readonly<Record<string, string>> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  object: 'a mapping',
  record: 'a mapping',
  array: 'a list',
};

/**
 * A zod error map with messages for humans for zod's own issues ("is required", "must be one
 * of ...", "unknown field ..."); the schemas' own checks bring their own messages. An
 * `unrecognized_keys` issue gets one line per unknown key, in the order of `issue.keys`.
 */
export const schemaIssueMessage: z.core.$ZodErrorMap = (issue) => {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      return `must be ${EXPECTED[issue.expected] ?? issue.expected} (got ${describeValue(issue.input)})`;
    case 'invalid_value': {
      const values = issue.values.map((value) => JSON.stringify(value));
      const expected = values.length === 1 ? values.join('') : `one of ${values.join(', ')}`;
      return `must be ${expected} (got ${describeValue(issue.input)})`;
    }
    case 'too_small':
      if (issue.origin === 'string') return Number(issue.minimum) <= 1 ? 'must not be empty' : `must be at least ${issue.minimum} characters long`;
      if (issue.origin === 'array') return `must list at least ${issue.minimum} ${issue.minimum === 1 ? 'entry' : 'entries'}`;
      return `must be ${issue.inclusive === false ? 'more than' : 'at least'} ${issue.minimum} (got ${describeValue(issue.input)})`;
    case 'too_big':
      if (issue.origin === 'string') return `must be at most ${issue.maximum} characters long`;
      if (issue.origin === 'array') return `must list at most ${issue.maximum} entries`;
      return `must be ${issue.inclusive === false ? 'less than' : 'at most'} ${issue.maximum} (got ${describeValue(issue.input)})`;
    case 'unrecognized_keys': {
      // By shape, not instanceof: a plugin's schema may come from another copy of zod 4.
      const shape = (issue.inst as { shape?: unknown } | undefined)?.shape;
      const known = typeof shape === 'object' && shape !== null ? Object.keys(shape) : [];
      return issue.keys.map((key) => `unknown field ${JSON.stringify(key)}${didYouMean(key, known)}`).join('\n');
    }
    default:
      return undefined;
  }
};

/** What one problem of a zod issue reports: its path, its message, and where the position points. */
export interface IssueReport {
  /** The YAML path the problem names. */
  readonly path: PathSegment[];
  readonly message: string;
  /** The path whose key or value the position points at (`target`). */
  readonly locatePath: PathSegment[];
  readonly target: 'key' | 'value';
  /**
   * The problem is at a character of the string value at `locatePath` (a Cedar policy's syntax
   * error): its UTF-16 offset, and its line and column inside the value for a message when the
   * file position of that character cannot be known (`params.inside` of a custom issue).
   */
  readonly inside?: InsideValue;
  /** A problem found elsewhere while checking this field (in another file), reported as it is (`params.elsewhere`). */
  readonly elsewhere?: ElsewhereProblem;
}

export interface InsideValue {
  readonly offset: number;
  readonly line: number;
  readonly column: number;
}

/** A problem of another file, or of another resource of this one (`file` absent), found while checking a field. */
export type ElsewhereProblem = Omit<ConfigProblem, 'file'> & { readonly file?: string };

/**
 * The problems of a zod issue (parsed with `schemaIssueMessage`) found under `prefix`: one per
 * unknown key, named at the mapping that has it and positioned at the key; else one at the issue's
 * path, positioned at the value (at the key when a check asked so with `params: {at: 'key'}`).
 * A custom issue with `params: {silent: true}` reports nothing (another issue says it better).
 */
export function issueReports(issue: z.core.$ZodIssue, prefix: readonly PathSegment[] = []): IssueReport[] {
  const params = issue.code === 'custom' ? issue.params : undefined;
  if (params?.silent === true) return [];
  const path = [...prefix, ...issue.path.map((segment) => (typeof segment === 'number' ? segment : String(segment)))];
  if (issue.code === 'unrecognized_keys') {
    const messages = issue.message.split('\n');
    return issue.keys.map((key, i) => ({ path, message: messages[i] ?? `unknown field ${JSON.stringify(key)}`, locatePath: [...path, key], target: 'key' }));
  }
  const report: IssueReport = { path, message: issue.message, locatePath: path, target: params?.at === 'key' ? 'key' : 'value' };
  if (params?.inside !== undefined) return [{ ...report, inside: params.inside as InsideValue }];
  if (params?.elsewhere !== undefined) return [{ ...report, elsewhere: params.elsewhere as ElsewhereProblem }];
  return [report];
}

/**
 * Where a report is in its document, and its message: at the character of a problem inside a
 * value when that can be known (else at the value, with `line L col C` inside it in the message).
 */
export function placeReport(report: IssueReport, document: { locate(path: readonly PathSegment[], target?: 'key' | 'value'): { line: number; column: number }; locateInside(path: readonly PathSegment[], offset: number): { line: number; column: number } | null }): { line: number; column: number; message: string } {
  const inside = report.inside;
  const exact = inside === undefined ? null : document.locateInside(report.locatePath, inside.offset);
  if (exact !== null) return { ...exact, message: report.message };
  const { line, column } = document.locate(report.locatePath, report.target);
  return { line, column, message: inside === undefined ? report.message : `line ${inside.line} col ${inside.column}: ${report.message}` };
}

/** Levenshtein distance. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution);
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** The text of a config file, or the one problem saying why it cannot be read. */
export async function readConfigText(file: string): Promise<string | ConfigProblem> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    return { file, line: 0, column: 0, resource: '', path: '', message: `cannot read the file: ${reason}` };
  }
}
