/**
 * Rules the official MCP registry applies to a server.json on top of its JSON schema (its Go
 * validators, `internal/validators/validators.go`), for those Gatehouse shares. Each is named, so
 * that a refusal says which rule it is:
 *
 * - `package-version-range`: a package's `version` is one specific version, not a range or a
 *   wildcard (`^1.2.3`, `~1.2.3`, `>=1.2.3`, `1.x`, `1.*`); `latest` is refused by the schema
 *   itself (`not: {const: "latest"}`).
 * - `package-identifier-spaces`: a package's `identifier` has no whitespace.
 *
 * The server's own `version` follows Gatehouse's version rule (names.ts), which refuses the same
 * and more. Only what the schema lets through is looked at: values of the wrong type are the
 * schema's to report.
 */
import { isVersionRange } from './names.ts';
import type { DocumentProblem } from './schema-problems.ts';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What the official registry's rules beyond the schema find wrong with a server.json document. */
export function officialRuleProblems(document: unknown): DocumentProblem[] {
  if (!isObject(document) || !Array.isArray(document.packages)) return [];
  const problems: DocumentProblem[] = [];
  document.packages.forEach((pkg, i) => {
    if (!isObject(pkg)) return;
    if (typeof pkg.version === 'string' && isVersionRange(pkg.version)) {
      problems.push({ path: `/packages/${i}/version`, message: `${JSON.stringify(pkg.version)} is a version range: pin one specific version such as "1.2.3" (rule package-version-range)` });
    }
    if (typeof pkg.identifier === 'string' && /\s/.test(pkg.identifier)) {
      problems.push({ path: `/packages/${i}/identifier`, message: 'must not contain whitespace (rule package-identifier-spaces)' });
    }
  });
  return problems;
}
