/**
 * Whether a server.json document may be stored and served: what the official schema (2025-12-11)
 * and the official registry's further rules find wrong with it, each problem naming its JSON path.
 * Publishing and every sync apply it to the document that will be stored, so what a registry
 * serves always validates against the schema it advertises.
 */
import { officialRuleProblems } from './official-rules.ts';
import { officialSchemaProblems } from './official-schema.ts';
import { describeProblem, type DocumentProblem } from './schema-problems.ts';

/** At most this many problems are named in one answer (the rest are counted). */
export const MAX_PROBLEMS_NAMED = 10;

/** The problems of a server.json, by JSON path (empty when it is valid). */
export function serverJsonProblems(document: unknown): DocumentProblem[] {
  const problems = officialSchemaProblems(document);
  const seen = new Set(problems.map((p) => p.path));
  for (const problem of officialRuleProblems(document)) {
    // A value the schema already refuses (such as "latest") is not refused twice.
    if (!seen.has(problem.path)) problems.push(problem);
  }
  return problems;
}

/** Problems in one line: the first MAX_PROBLEMS_NAMED, then how many more there are. */
export function describeProblems(problems: readonly DocumentProblem[]): string {
  const named = problems.slice(0, MAX_PROBLEMS_NAMED).map(describeProblem).join('; ');
  const more = problems.length - MAX_PROBLEMS_NAMED;
  return more > 0 ? `${named}; and ${more} more problem${more === 1 ? '' : 's'}` : named;
}
