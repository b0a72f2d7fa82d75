/**
 * Flat `[name, value, ...]` header lists as the parsers hand them over: names keep the case the
 * peer wrote (`Content-Length` from node:http, `Content-Type` from Express or Go), and header
 * names are case-insensitive (RFC 9110 §5.1), so a name is never looked up with `===` or
 * `indexOf` alone.
 */

/** Removes every `lowerName` header from `list`, whatever the case it was written in. */
export function removeHeader(list: string[], lowerName: string): void {
  const length = lowerName.length;
  for (let i = list.length - 2; i >= 0; i -= 2) {
    const name = list[i]!;
    if (name.length === length && (name === lowerName || name.toLowerCase() === lowerName)) list.splice(i, 2);
  }
}
