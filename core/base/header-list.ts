/**
 * Flat `[name, value, ...]` header lists as the parsers hand them over: names keep the case the
 * peer wrote (`Content-Length` from node:http, `Content-Type` from Express or Go), and header
 * names are case-insensitive (RFC 9110 §5.1), so a name is never looked up with `===` or
 * `indexOf` alone.
 */

/**
 * Whether `name` is `lowerName` (lower-case ASCII) in any letter case: HTTP field names are
 * case-insensitive in ASCII only (RFC 9110 §5.1). Compared as it is first: most peers (fetch,
 * the SDKs) write names in lower case. Otherwise compared a character at a time, an ASCII
 * capital taken for its small letter, without lowering the name: `toLowerCase` scans, copies
 * and allocates (some 190 instructions for a 12-letter name), and a node:http or Go peer's
 * `Content-Length` or `Date` is written capitalised on every message.
 */
export function isHeaderNamed(name: string, lowerName: string): boolean {
  return name.length === lowerName.length && (name === lowerName || sameLetters(name, lowerName, name.length));
}

/** Whether `name` begins with `lowerPrefix` (lower-case ASCII) in any letter case, as isHeaderNamed compares. */
export function startsWithHeaderName(name: string, lowerPrefix: string): boolean {
  return name.length >= lowerPrefix.length && sameLetters(name, lowerPrefix, lowerPrefix.length);
}

/** Whether the first `count` characters of `name` are those of `lower`, an ASCII capital taken for its small letter. */
function sameLetters(name: string, lower: string, count: number): boolean {
  for (let i = 0; i < count; i++) {
    const c = name.charCodeAt(i);
    const l = lower.charCodeAt(i);
    if (c !== l && (c !== l - 0x20 || l < 0x61 || l > 0x7a)) return false;
  }
  return true;
}

/** Removes every `lowerName` header from `list`, whatever the case it was written in. */
export function removeHeader(list: string[], lowerName: string): void {
  for (let i = list.length - 2; i >= 0; i -= 2) if (isHeaderNamed(list[i]!, lowerName)) list.splice(i, 2);
}

/** Whether `list` has a `lowerName` header, whatever the case it was written in. */
export function hasHeader(list: readonly string[], lowerName: string): boolean {
  for (let i = 0; i < list.length; i += 2) if (isHeaderNamed(list[i]!, lowerName)) return true;
  return false;
}

/**
 * Moves the pair at `at` to the end of `list` when it is still the `lowerName` header put there
 * (hooks may have added headers after it, or removed, moved or repeated it: then nothing moves). Header
 * order means nothing to HTTP across names; a head whose only line that differs every time is
 * its last shares every other line with the last head written (head-memo.ts).
 */
export function moveLast(list: string[], at: number, lowerName: string): void {
  if (at >= list.length - 2 || list[at] !== lowerName) return;
  // A hook that pushed a copy of its own after it: the copies stay in their order.
  for (let i = at + 2; i < list.length; i += 2) if (isHeaderNamed(list[i]!, lowerName)) return;
  const value = list[at + 1]!;
  list.splice(at, 2);
  list.push(lowerName, value);
}
