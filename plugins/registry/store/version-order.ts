/**
 * Which version of an entry is the latest: the highest by semantic-versioning precedence; a
 * version that is not semver ranks below every semver version (and among themselves, the most
 * recently published wins, which the query's tie-break on publish time decides).
 *
 * `versionSortKey` encodes a version as text whose byte order (collation "C") is semver
 * precedence, so the database can order versions with a plain index-friendly ORDER BY:
 * - numbers are length-prefixed (`7` → `017`, `12` → `0212`), so they compare numerically;
 * - a prerelease sorts before its release (`!` < `~`), numeric identifiers before alphanumeric
 *   ones (`0…` < `1…`), and a longer identifier list after its prefix;
 * - build metadata (`+…`) is ignored, as semver says.
 */

const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*)?$/;

export function isSemver(version: string): boolean {
  return SEMVER.test(version);
}

function num(digits: string): string {
  return String(digits.length).padStart(2, '0') + digits;
}

export function versionSortKey(version: string): string {
  const match = SEMVER.exec(version);
  if (match === null) return '0';
  const [, major, minor, patch, prerelease] = match;
  let key = '1' + num(major!) + '.' + num(minor!) + '.' + num(patch!);
  if (prerelease === undefined) return key + '~';
  for (const id of prerelease.split('.')) key += '!' + (/^\d+$/.test(id) ? '0' + num(id) : '1' + id);
  return key;
}
