/**
 * Flat `[name, value, ...]` header lists as the parsers hand them over: names keep the case the
 * peer wrote (`Content-Length` from node:http, `Content-Type` from Express or Go), and header
 * names are case-insensitive (RFC 9110 §5.1), so a name is never looked up with `===` or
 * `indexOf` alone.
 */

/**
 * Whether `name` is `lowerName` in any letter case. Compared as it is first: most peers (fetch,
 * the SDKs) write names in lower case, and a name compared with `===` costs about half a
 * lowering (`toLowerCase` scans and copies: some 190 instructions for a fresh 12-letter name).
 * It is lowered only when the lengths and the first letters agree and the bytes do not: a
 * node:http peer's own `Content-Length` is not lowered to be told from `mcp-session-id`.
 * Names are latin1, as HTTP parsers give them, where only A-Z lower to ASCII (the first letter
 * is compared as ASCII).
 */
export function isHeaderNamed(name: string, lowerName: string): boolean {
  return (
    name.length === lowerName.length &&
    (name === lowerName || ((name.charCodeAt(0) | 0x20) === lowerName.charCodeAt(0) && name.toLowerCase() === lowerName))
  );
}

/** Removes every `lowerName` header from `list`, whatever the case it was written in. */
export function removeHeader(list: string[], lowerName: string): void {
  for (let i = list.length - 2; i >= 0; i -= 2) if (isHeaderNamed(list[i]!, lowerName)) list.splice(i, 2);
}

/** Whether `list` has a `lowerName` header, whatever the case it was written in. */
export function hasHeader(list: readonly string[], lowerName: string): boolean {
  return firstHeader(list, lowerName) !== undefined;
}

/** The value of the first `lowerName` header of `list`, or undefined. */
export function firstHeader(list: readonly string[], lowerName: string): string | undefined {
  for (let i = 0; i < list.length; i += 2) if (isHeaderNamed(list[i]!, lowerName)) return list[i + 1];
  return undefined;
}
