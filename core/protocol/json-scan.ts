/**
 * A backend's JSON-RPC response as a modern client gets it, changed only where the era needs it:
 * `"resultType":"complete"` into its result, every other byte as the backend sent it. Reading the
 * answer (JSON.parse) and writing it anew (JSON.stringify) builds and walks every value of it on
 * every call; this validates the bytes as JSON in one pass without building anything, and knows
 * where the top-level keys and the result's keys are.
 *
 * It is strict, and gives up on anything it is not sure of: null sends the caller back to reading
 * the answer and writing it anew. What passes as bytes is valid UTF-8 and valid JSON (RFC 8259,
 * every value checked, nested no deeper than MAX_DEPTH), and exactly
 * `{"jsonrpc":"2.0","id":<the request's id>,"result":{...}}` — each of the three keys once and
 * no other, none spelled with an escape, the id written as the gateway writes it — so that every
 * reader, whether it takes the first of two keys or the last, reads the answer the gateway checked.
 */
import { isUtf8 } from 'node:buffer';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

/** Nesting the scanner follows; deeper answers are read and written anew (JSON.parse copes). */
const MAX_DEPTH = 64;

function isSpace(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= ZERO && c <= NINE;
}

function isHex(c: number | undefined): boolean {
  return c !== undefined && ((c >= ZERO && c <= NINE) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));
}

function skipSpace(buf: Buffer, i: number, end: number): number {
  while (i < end && isSpace(buf[i])) i++;
  return i;
}

/** Index just past the string whose opening quote is at `i` (its escapes checked, no control character), or -1. */
function skipString(buf: Buffer, i: number, end: number): number {
  for (let at = i + 1; at < end; at++) {
    const c = buf[at]!;
    if (c === QUOTE) return at + 1;
    if (c < 0x20) return -1;
    if (c !== BACKSLASH) continue;
    const e = buf[++at];
    if (e === 0x75 /* u */) {
      if (!isHex(buf[at + 1]) || !isHex(buf[at + 2]) || !isHex(buf[at + 3]) || !isHex(buf[at + 4])) return -1;
      at += 4;
    } else if (e !== QUOTE && e !== BACKSLASH && e !== 0x2f && e !== 0x62 && e !== 0x66 && e !== 0x6e && e !== 0x72 && e !== 0x74) {
      return -1;
    }
  }
  return -1;
}

/** Index just past the number starting at `i` (JSON's grammar), or -1. */
function skipNumber(buf: Buffer, i: number, end: number): number {
  if (buf[i] === MINUS) i++;
  if (buf[i] === ZERO) i++;
  else if (isDigit(buf[i])) while (i < end && isDigit(buf[i])) i++;
  else return -1;
  if (buf[i] === DOT) {
    i++;
    if (!isDigit(buf[i])) return -1;
    while (i < end && isDigit(buf[i])) i++;
  }
  if (buf[i] === 0x65 || buf[i] === 0x45) {
    i++;
    if (buf[i] === PLUS || buf[i] === MINUS) i++;
    if (!isDigit(buf[i])) return -1;
    while (i < end && isDigit(buf[i])) i++;
  }
  return i > end ? -1 : i;
}

/** Index just past `word` at `i`, or -1. */
function skipWord(buf: Buffer, i: number, end: number, word: string): number {
  if (i + word.length > end) return -1;
  for (let j = 0; j < word.length; j++) if (buf[i + j] !== word.charCodeAt(j)) return -1;
  return i + word.length;
}

/**
 * Index just past the JSON value starting at `i` (no leading space), checked whole; -1 when it is
 * not one, or, with `unique`, when some object in it has a key twice or one spelled with an escape.
 */
function skipValue(buf: Buffer, i: number, end: number, depth: number, unique = false): number {
  if (i >= end) return -1;
  const c = buf[i]!;
  switch (c) {
    case QUOTE:
      return skipString(buf, i, end);
    case OPEN_BRACE:
      return skipObject(buf, i, end, depth + 1, unique);
    case OPEN_BRACKET: {
      if (depth + 1 > MAX_DEPTH) return -1;
      i = skipSpace(buf, i + 1, end);
      if (buf[i] === CLOSE_BRACKET) return i + 1;
      for (;;) {
        i = skipValue(buf, i, end, depth + 1, unique);
        if (i === -1) return -1;
        i = skipSpace(buf, i, end);
        if (buf[i] === CLOSE_BRACKET) return i + 1;
        if (buf[i] !== COMMA) return -1;
        i = skipSpace(buf, i + 1, end);
      }
    }
    case 0x74:
      return skipWord(buf, i, end, 'true');
    case 0x66:
      return skipWord(buf, i, end, 'false');
    case 0x6e:
      return skipWord(buf, i, end, 'null');
    default:
      return skipNumber(buf, i, end);
  }
}

/**
 * With `unique`, an object's keys are told apart by comparing their bytes with the keys before
 * them (plain keys only: no escape, so equal bytes are equal keys and unequal ones unequal),
 * their spans kept on one stack for the whole scan, innermost object last: no string and no Set
 * per key, which cost several times the scan itself for an MCP request's few small objects. An
 * object with more keys than MAX_COMPARED_KEYS goes on with a Set of their spellings. The scan is
 * synchronous and every object takes its spans off the stack as it ends, so one stack serves all.
 */
const MAX_COMPARED_KEYS = 16;
const keySpans = new Int32Array(2 * MAX_COMPARED_KEYS * (MAX_DEPTH + 2));
let keyTop = 0;

/** Whether the key spanning `from`..`to` in `buf` has the bytes of one of the spans on the stack from `base`. */
function spannedBefore(buf: Buffer, base: number, from: number, to: number): boolean {
  const length = to - from;
  for (let k = base; k < keyTop; k += 2) {
    const start = keySpans[k]!;
    if (keySpans[k + 1]! - start !== length) continue;
    let j = 1; // both open with a quote
    while (j < length && buf[start + j] === buf[from + j]) j++;
    if (j === length) return true;
  }
  return false;
}

/** Index just past the object at `i` (its `{`), checked whole, or -1 (with `unique`: as skipValue). */
function skipObject(buf: Buffer, i: number, end: number, depth: number, unique = false): number {
  if (depth > MAX_DEPTH) return -1;
  const base = keyTop;
  const at = skipMembers(buf, i, end, depth, unique, base);
  keyTop = base;
  return at;
}

function skipMembers(buf: Buffer, i: number, end: number, depth: number, unique: boolean, base: number): number {
  i = skipSpace(buf, i + 1, end);
  if (i < end && buf[i] === CLOSE_BRACE) return i + 1;
  let keys: Set<string> | null = null;
  for (;;) {
    const keyAt = i;
    i = skipKey(buf, i, end, unique);
    if (i === -1) return -1;
    if (unique) {
      if (keys === null && keyTop - base < 2 * MAX_COMPARED_KEYS) {
        if (spannedBefore(buf, base, keyAt, i)) return -1;
        keySpans[keyTop++] = keyAt;
        keySpans[keyTop++] = i;
      } else {
        if (keys === null) {
          keys = new Set<string>();
          for (let k = base; k < keyTop; k += 2) keys.add(buf.toString('latin1', keySpans[k]!, keySpans[k + 1]!));
        }
        const key = buf.toString('latin1', keyAt, i);
        if (keys.has(key)) return -1;
        keys.add(key);
      }
    }
    i = valueAfter(buf, i, end);
    if (i === -1) return -1;
    i = skipValue(buf, i, end, depth, unique);
    if (i === -1) return -1;
    i = skipSpace(buf, i, end);
    if (i >= end) return -1;
    if (buf[i] === CLOSE_BRACE) return i + 1;
    if (buf[i] !== COMMA) return -1;
    i = skipSpace(buf, i + 1, end);
  }
}

/**
 * Index just past the key whose opening quote is at `i`, or -1. With `plain`, a key with an
 * escape is refused too: the keys the caller compares are compared as written, so an escaped
 * spelling of one must not slip by.
 */
function skipKey(buf: Buffer, i: number, end: number, plain: boolean): number {
  if (i >= end || buf[i] !== QUOTE) return -1;
  const keyEnd = skipString(buf, i, end);
  if (plain && keyEnd !== -1) for (let k = i + 1; k < keyEnd - 1; k++) if (buf[k] === BACKSLASH) return -1;
  return keyEnd;
}

/** The index of the value after the key ending at `keyEnd` (its colon and spaces skipped), or -1. */
function valueAfter(buf: Buffer, keyEnd: number, end: number): number {
  const i = skipSpace(buf, keyEnd, end);
  if (i >= end || buf[i] !== COLON) return -1;
  return skipSpace(buf, i + 1, end);
}

/**
 * Whether `buf` is one JSON value, valid UTF-8, that every reader reads alike: no object in it
 * has a key twice (read last-wins by JSON.parse, first-wins by some parsers) or one spelled with
 * an escape (which may spell another key). Bytes that pass may go on as they came.
 */
export function readAlikeByAll(buf: Buffer): boolean {
  const end = buf.length;
  keyTop = 0;
  const at = skipValue(buf, skipSpace(buf, 0, end), end, 0, true);
  return at !== -1 && skipSpace(buf, at, end) === end && isUtf8(buf);
}

/** Whether the bytes from `at` to `end` are `text` (ASCII). */
function bytesAre(buf: Buffer, at: number, end: number, text: string): boolean {
  if (end - at !== text.length) return false;
  for (let j = 0; j < text.length; j++) if (buf[at + j] !== text.charCodeAt(j)) return false;
  return true;
}

const RESULT_TYPE = Buffer.from('"resultType":"complete"');
const RESULT_TYPE_COMMA = Buffer.from('"resultType":"complete",');

/**
 * `buf`, a backend's JSON answer, with `"resultType":"complete"` first in its result, for a
 * modern client. Only for exactly `{"jsonrpc":"2.0","id":<idText>,"result":{...}}` (any order
 * and spacing, each key once, the id written as `idText`) whose result has no `resultType` of
 * its own; null for anything else (an error, another id, a key repeated, unknown or escaped,
 * bytes that are not valid JSON or UTF-8), which the caller reads and writes anew.
 */
export function completeResultBytes(buf: Buffer, idText: string): Buffer | null {
  const resultAt = plainResultAt(buf, idText);
  if (resultAt === -1) return null;
  const resultEmpty = buf[skipSpace(buf, resultAt, buf.length)] === CLOSE_BRACE;
  return Buffer.concat([buf.subarray(0, resultAt), resultEmpty ? RESULT_TYPE : RESULT_TYPE_COMMA, buf.subarray(resultAt)]);
}

/**
 * Whether `buf`, a backend's JSON answer, may reach a legacy client as it is: the same answers
 * as completeResultBytes takes (exactly `{"jsonrpc":"2.0","id":<idText>,"result":{...}}`, each
 * key once, valid JSON and UTF-8, a result without `resultType`), which a legacy client gets
 * unchanged. Anything else is read and written anew by the caller.
 */
export function isPlainResult(buf: Buffer, idText: string): boolean {
  return plainResultAt(buf, idText) !== -1;
}

/** Where the members of the result of a plain answer (see completeResultBytes) begin, just after its `{`; -1 for any other bytes. */
function plainResultAt(buf: Buffer, idText: string): number {
  const end = buf.length;
  let i = skipSpace(buf, 0, end);
  if (i >= end || buf[i] !== OPEN_BRACE || !isUtf8(buf)) return -1;
  i = skipSpace(buf, i + 1, end);
  let seen = 0; // bits: 1 jsonrpc, 2 id, 4 result
  let resultAt = -1;
  for (;;) {
    const keyStart = i + 1;
    const afterKey = skipKey(buf, i, end, true);
    if (afterKey === -1) return -1;
    const keyEnd = afterKey - 1; // its closing quote
    const valueStart = valueAfter(buf, afterKey, end);
    if (valueStart === -1) return -1;
    let bit: number;
    if (bytesAre(buf, keyStart, keyEnd, 'result')) {
      bit = 4;
      resultAt = valueStart + 1;
      const members = resultMembers(buf, valueStart, end);
      if (members === null) return -1;
      i = members.end;
    } else {
      i = skipValue(buf, valueStart, end, 1);
      if (i === -1) return -1;
      if (bytesAre(buf, keyStart, keyEnd, 'jsonrpc')) {
        bit = 1;
        if (!bytesAre(buf, valueStart, i, '"2.0"')) return -1;
      } else if (bytesAre(buf, keyStart, keyEnd, 'id')) {
        bit = 2;
        if (!bytesAre(buf, valueStart, i, idText)) return -1;
      } else {
        return -1;
      }
    }
    if ((seen & bit) !== 0) return -1;
    seen |= bit;
    i = skipSpace(buf, i, end);
    if (i >= end) return -1;
    if (buf[i] === CLOSE_BRACE) break;
    if (buf[i] !== COMMA) return -1;
    i = skipSpace(buf, i + 1, end);
  }
  if (seen !== 7 || skipSpace(buf, i + 1, end) !== end) return -1;
  return resultAt;
}

/** The result object at `at`, checked whole: where it ends and how many members it has; null when it is not one, or has a `resultType` of its own. */
function resultMembers(buf: Buffer, at: number, end: number): { end: number; count: number } | null {
  if (buf[at] !== OPEN_BRACE) return null;
  let i = skipSpace(buf, at + 1, end);
  if (i < end && buf[i] === CLOSE_BRACE) return { end: i + 1, count: 0 };
  let count = 0;
  for (;;) {
    const afterKey = skipKey(buf, i, end, true);
    if (afterKey === -1 || bytesAre(buf, i + 1, afterKey - 1, 'resultType')) return null;
    const valueStart = valueAfter(buf, afterKey, end);
    if (valueStart === -1) return null;
    i = skipValue(buf, valueStart, end, 2);
    if (i === -1) return null;
    count++;
    i = skipSpace(buf, i, end);
    if (i >= end) return null;
    if (buf[i] === CLOSE_BRACE) return { end: i + 1, count };
    if (buf[i] !== COMMA) return null;
    i = skipSpace(buf, i + 1, end);
  }
}
