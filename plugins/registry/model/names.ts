/**
 * The official MCP registry's rules for entry names and versions.
 *
 * - A name is reverse-DNS `namespace/name`: exactly one `/`, the namespace of dot-separated
 *   labels (letters, digits and `-`), the name of letters, digits, `.`, `_` and `-`, each
 *   starting with a letter or digit (so no `..`); 3 to 200 characters.
 * - A version is one specific version (at most 255 characters): not `latest`, not a range
 *   (`^1.2.3`, `~1.2.3`, `>=1.2.3`, `1.x`, `1.*`, `1.0.0 - 2.0.0`, `1 || 2`). Semantic
 *   versioning is recommended; other versions are accepted but rank below semver ones.
 */
import { isWellFormedText } from './json-value.ts';
import { skillFullName } from './skill-document.ts';

/**
 * `namespace/name`: the namespace's dot-separated labels start and end with a letter or digit (no
 * empty label, so no "." or ".."), the name starts with one.
 */
const NAME = /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*\/[a-zA-Z0-9][a-zA-Z0-9._-]*$/;

/** What is wrong with an entry name, or null. */
export function entryNameProblem(name: unknown): string | null {
  if (typeof name !== 'string' || name === '') return 'name is required: a reverse-DNS "namespace/name" such as "io.github.acme/weather"';
  if (name.length < 3 || name.length > 200) return `name must be 3 to 200 characters long (got ${name.length})`;
  if (!NAME.test(name)) {
    return `name ${JSON.stringify(name)} is not valid: use reverse-DNS "namespace/name" with exactly one "/", dot-separated labels of letters, digits and "-" in the namespace, and letters, digits, ".", "_" and "-" in the name, each starting with a letter or digit (e.g. "io.github.acme/weather")`;
  }
  return null;
}

/**
 * The registry's name of a document of `kind` (a server's `name`; a skill's `namespace/name`,
 * from either of its shapes: skill-document.ts) when it is valid, else what is wrong with it.
 */
export function documentName(kind: 'server' | 'skill', document: Readonly<Record<string, unknown>>): { name: string; problem: null } | { name: undefined; problem: string } {
  const naming = kind === 'skill' ? skillFullName(document) : { ok: true as const, fullName: document.name };
  if (!naming.ok) return { name: undefined, problem: naming.problem };
  const problem = entryNameProblem(naming.fullName);
  return problem === null ? { name: naming.fullName as string, problem: null } : { name: undefined, problem };
}

/**
 * Whether `version` is a range or a wildcard rather than one version: a comparator (`^`, `~`, `>`,
 * `<`, `=`), whitespace (`1.0.0 - 2.0.0`), `||`, or an `x`, `X` or `*` part (`1.x`, `1.*`).
 */
export function isVersionRange(version: string): boolean {
  return /^[\^~><=]/.test(version) || /\s/.test(version) || version.includes('||') || version.split('.').some((part) => part === 'x' || part === 'X' || part === '*');
}

/** What is wrong with a version to publish, or null. */
export function versionProblem(version: unknown): string | null {
  if (typeof version !== 'string' || version === '') return 'version is required: one specific version such as "1.0.2"';
  if (version.length > 255) return 'version must be at most 255 characters long';
  if (version === 'latest') return 'version must be a specific version: "latest" is what readers ask for, not something to publish';
  if (isVersionRange(version)) return `version ${JSON.stringify(version)} is a range: publish one specific version such as "1.2.3"`;
  if (/[/?#%\\]/.test(version)) return `version ${JSON.stringify(version)} must not contain "/", "?", "#", "%" or "\\"`;
  if (/[\x00-\x1f\x7f]/.test(version)) return `version ${JSON.stringify(version)} must not contain control characters`;
  if (!isWellFormedText(version)) return 'version must be text: it contains a lone UTF-16 surrogate';
  return null;
}
