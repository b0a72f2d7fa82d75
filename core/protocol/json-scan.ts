/**
 * JSON read as bytes, without building anything: whether a body is one JSON value that every
 * reader reads alike (readAlikeByAll, for a client's request that may go on as its own bytes), and
 * the skipping of values that answer-bytes.ts reads a backend's answer with.
 *
 * It is strict, and gives up on anything it is not sure of: what passes is valid UTF-8 and valid
 * JSON (RFC 8259, every value checked, nested no deeper than MAX_DEPTH); the caller reads and
 * writes anew whatever does not pass.
 *
 * Two ways to the same verdicts: the fast path first (json-scan-wasm.ts: WebAssembly, a third to
 * a half of the instructions), then, for what it leaves undecided (objects of many keys, long
 * bytes), the JavaScript below. test/eras/json-scan-wasm.test.ts holds the two to the same answers.
 */
import { isUtf8 } from 'node:buffer';
import { readAlikeFast, skipValueFast, UNDECIDED } from './json-scan-wasm.ts';

export const QUOTE = 0x22;
const BACKSLASH = 0x5c;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
export const COMMA = 0x2c;
export const COLON = 0x3a;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

/** Nesting the scanner follows; deeper answers are read and written anew (JSON.parse copes). */
const MAX_DEPTH = 64;

/** 1 for the bytes a string holds as they are: not a quote, a backslash or a control character. */
const STRING_PLAIN = new Uint8Array(256);
for (let c = 0x20; c < 0x100; c++) if (c !== QUOTE && c !== BACKSLASH) STRING_PLAIN[c] = 1;

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

function isHex(c: number): boolean {
  return (c >= ZERO && c <= NINE) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

/** `i`, or the index of the first byte from `i` on that is not JSON's white space (`end` at most). */
export function skipSpace(buf: Buffer, i: number, end: number): number {
  while (i < end) {
    const c = buf[i]!;
    if (c > 0x20 || (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09)) return i;
    i++;
  }
  return i;
}

/** Index just past the string whose opening quote is at `i` (its escapes checked, no control character), or -1. */
function skipString(buf: Buffer, i: number, end: number): number {
  let at = i + 1;
  for (;;) {
    while (at < end && STRING_PLAIN[buf[at]!] === 1) at++;
    if (at >= end) return -1;
    const c = buf[at]!;
    if (c === QUOTE) return at + 1;
    if (c !== BACKSLASH || at + 1 >= end) return -1;
    const e = buf[at + 1]!;
    if (e === 0x75 /* u */) {
      if (at + 5 >= end || !isHex(buf[at + 2]!) || !isHex(buf[at + 3]!) || !isHex(buf[at + 4]!) || !isHex(buf[at + 5]!)) return -1;
      at += 6;
    } else if (e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
      at += 2;
    } else {
      return -1;
    }
  }
}

/** Index just past the string at `i` when it has no escape (a key compared as written), or -1. */
export function skipPlainString(buf: Buffer, i: number, end: number): number {
  let at = i + 1;
  while (at < end && STRING_PLAIN[buf[at]!] === 1) at++;
  return at < end && buf[at] === QUOTE ? at + 1 : -1;
}

/** Index just past the number starting at `i` (JSON's grammar), or -1. */
function skipNumber(buf: Buffer, i: number, end: number): number {
  if (i < end && buf[i] === MINUS) i++;
  if (i >= end) return -1;
  if (buf[i] === ZERO) i++;
  else if (isDigit(buf[i]!)) while (++i < end && isDigit(buf[i]!));
  else return -1;
  if (i < end && buf[i] === DOT) {
    if (++i >= end || !isDigit(buf[i]!)) return -1;
    while (++i < end && isDigit(buf[i]!));
  }
  if (i < end && (buf[i] === 0x65 || buf[i] === 0x45)) {
    if (++i < end && (buf[i] === PLUS || buf[i] === MINUS)) i++;
    if (i >= end || !isDigit(buf[i]!)) return -1;
    while (++i < end && isDigit(buf[i]!));
  }
  return i;
}

/**
 * A number every reader reads as JSON.parse does (skipNumber's index, or -1): at most 15
 * characters and no exponent. A longer integer is read exactly by some parsers (Python's int)
 * and rounded by JSON.parse (9007199254740993 is ...992 to the gateway), a long fraction exactly
 * by decimal readers, an exponent may overflow (1e400 is Infinity here): a decision made on the
 * value JSON.parse read must be about the value the backend runs, so such bytes are written anew.
 */
function skipExactNumber(buf: Buffer, i: number, end: number): number {
  const at = skipNumber(buf, i, end);
  if (at - i > 15) return -1;
  for (let k = i; k < at; k++) if (buf[k] === 0x65 || buf[k] === 0x45) return -1;
  return at;
}

/** Index just past `word` (ASCII) at `i`, or -1. */
function skipWord(buf: Buffer, i: number, end: number, word: string): number {
  if (i + word.length > end) return -1;
  for (let j = 0; j < word.length; j++) if (buf[i + j] !== word.charCodeAt(j)) return -1;
  return i + word.length;
}

/**
 * The containers open in a scan, one entry per depth: whether each is an object (1) or an array
 * (0), and where its keys begin on the key stack. The scan is synchronous, so one set serves all.
 */
const openKinds = new Uint8Array(MAX_DEPTH + 2);
const openKeyBases = new Int32Array(MAX_DEPTH + 2);

/**
 * With `unique`, an object's keys are told apart by comparing their bytes with the keys before
 * them (plain keys only: no escape, so equal bytes are equal keys and unequal ones unequal),
 * their spans kept on one stack for the whole scan, innermost object last: no string and no Set
 * per key, which cost several times the scan itself for an MCP request's few small objects. An
 * object with more keys than MAX_COMPARED_KEYS goes on with a Set of their spellings.
 */
const MAX_COMPARED_KEYS = 16;
const keySpans = new Int32Array(2 * MAX_COMPARED_KEYS * (MAX_DEPTH + 2));

/** Whether the key spanning `from`..`to` in `buf` has the bytes of one of the spans on the stack from `base` to `top`. */
function spannedBefore(buf: Buffer, base: number, top: number, from: number, to: number): boolean {
  const length = to - from;
  for (let k = base; k < top; k += 2) {
    const start = keySpans[k]!;
    if (keySpans[k + 1]! - start !== length) continue;
    let j = 1; // both open with a quote
    while (j < length && buf[start + j] === buf[from + j]) j++;
    if (j === length) return true;
  }
  return false;
}

/** Keys of objects with more than MAX_COMPARED_KEYS, by depth (rare: made when needed). */
const keySets: (Set<string> | null)[] = [];

/** What a scan checks besides JSON itself (skipValue's `checks`): no key twice in an object and none spelled with an escape... */
export const KEYS = 1;
/** ...no number that JSON.parse reads otherwise than an exact reader (skipExactNumber). */
export const EXACT_NUMBERS = 2;

/**
 * Index just past the JSON value at `i` (no leading space), checked whole, or -1: when it is not
 * one, nests deeper than MAX_DEPTH (counting the `depth` containers around it), or fails one of
 * `checks` (KEYS, EXACT_NUMBERS). The fast path decides most (json-scan-wasm.ts).
 */
export function skipValue(buf: Buffer, i: number, end: number, depth: number, checks: number): number {
  const fast = skipValueFast(buf, i, end, depth, checks);
  return fast !== UNDECIDED ? fast : skipValueGenerally(buf, i, end, depth, checks);
}

/**
 * skipValue in JavaScript, for what the fast path leaves undecided (exported for the test that
 * holds the two to the same verdicts). It does not check UTF-8 (readAlikeGenerally and the
 * answer's check do, over the whole bytes). One loop, its open containers on a stack, rather
 * than a function per kind of value calling the others: a request's many small tokens cost a
 * call and a return each that way, more than their bytes.
 * The checks are tested as booleans, results of comparisons: the compiler knows them for
 * booleans, and each test is one compare, where a parameter's truth took a dozen instructions
 * (the checks of whatever else it could hold), three times a key.
 */
export function skipValueGenerally(buf: Buffer, i: number, end: number, depth: number, checks: number): number {
  // Objects end by clearing their own Set; a scan that gave up midway leaves one, which the next
  // scan's object at that depth would take for its own and miss a key twice in it.
  if (keySets.length !== 0) keySets.length = 0;
  return scanGenerally(buf, i, end, depth, checks);
}

function scanGenerally(buf: Buffer, i: number, end: number, depth: number, checks: number): number {
  const checked = (checks & KEYS) !== 0;
  const outer = depth;
  let top = 0; // of keySpans
  for (;;) {
    if (i >= end) return -1; // a value starts at i
    let c = buf[i]!;
    if (c === QUOTE) {
      i = skipString(buf, i, end);
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > MAX_DEPTH) return -1;
      i = skipSpace(buf, i + 1, end);
      if (i >= end) return -1;
      if (c === OPEN_BRACKET) {
        openKinds[depth] = 0;
        if (buf[i] !== CLOSE_BRACKET) continue; // its first value
        i++;
        depth--;
      } else {
        openKinds[depth] = 1;
        openKeyBases[depth] = top;
        if (buf[i] !== CLOSE_BRACE) {
          i = member(buf, i, end, checked, depth, top);
          if (i < 0) return -1;
          if (checked) top = memberTop;
          continue; // its value
        }
        i++;
        depth--;
      }
    } else {
      i = c === 0x74 ? skipWord(buf, i, end, 'true') : c === 0x66 ? skipWord(buf, i, end, 'false') : c === 0x6e ? skipWord(buf, i, end, 'null') : (checks & EXACT_NUMBERS) !== 0 ? skipExactNumber(buf, i, end) : skipNumber(buf, i, end);
    }
    if (i < 0) return -1;
    // A value ended at i: a comma and the next, or the end of its container (and maybe more).
    for (;;) {
      if (depth === outer) return i;
      i = skipSpace(buf, i, end);
      if (i >= end) return -1;
      c = buf[i]!;
      const isObject = openKinds[depth] === 1;
      if (c === COMMA) {
        i = skipSpace(buf, i + 1, end);
        if (isObject) {
          i = member(buf, i, end, checked, depth, top);
          if (i < 0) return -1;
          if (checked) top = memberTop;
        }
        break;
      }
      if (c !== (isObject ? CLOSE_BRACE : CLOSE_BRACKET)) return -1;
      i++;
      if (isObject) {
        top = openKeyBases[depth]!;
        if (checked && keySets.length > depth) keySets[depth] = null;
      }
      depth--;
    }
  }
}

/** The key stack's top after `member` (set by it with `unique`). */
let memberTop = 0;

/**
 * Index of the value of the member whose key's quote is at `i`, in the object open at `depth`
 * (the key, its colon and spaces skipped), or -1. With `unique`, the key is refused when spelled
 * with an escape or seen before in the object, else kept (memberTop: the stack's new top).
 */
function member(buf: Buffer, i: number, end: number, unique: boolean, depth: number, top: number): number {
  if (i >= end || buf[i] !== QUOTE) return -1;
  const keyAt = i;
  i = unique ? skipPlainString(buf, i, end) : skipString(buf, i, end);
  if (i < 0) return -1;
  if (unique) {
    const base = openKeyBases[depth]!;
    if (top - base < 2 * MAX_COMPARED_KEYS) {
      if (spannedBefore(buf, base, top, keyAt, i)) return -1;
      keySpans[top++] = keyAt;
      keySpans[top++] = i;
    } else if (manyKeys(buf, depth, base, top, keyAt, i)) {
      return -1;
    }
    memberTop = top;
  }
  if (i < end && buf[i] !== COLON) i = skipSpace(buf, i, end);
  if (i >= end || buf[i] !== COLON) return -1;
  return skipSpace(buf, i + 1, end);
}

/** Whether the key at `from`..`to` was seen before in an object of more than MAX_COMPARED_KEYS (kept in a Set from there). */
function manyKeys(buf: Buffer, depth: number, base: number, top: number, from: number, to: number): boolean {
  while (keySets.length <= depth) keySets.push(null);
  let keys = keySets[depth]!;
  if (keys === null) {
    keys = new Set<string>();
    for (let k = base; k < top; k += 2) keys.add(buf.toString('latin1', keySpans[k]!, keySpans[k + 1]!));
    keySets[depth] = keys;
  }
  const key = buf.toString('latin1', from, to);
  if (keys.has(key)) return true;
  keys.add(key);
  return false;
}

/**
 * Whether `buf` is one JSON value, valid UTF-8, that every reader reads alike: no object in it
 * has a key twice (read last-wins by JSON.parse, first-wins by some parsers) or one spelled with
 * an escape (which may spell another key), and no number is one JSON.parse rounds or overflows
 * (skipExactNumber). Bytes that pass may go on as they came.
 */
export function readAlikeByAll(buf: Buffer): boolean {
  const fast = readAlikeFast(buf);
  return fast !== UNDECIDED ? fast === 1 : readAlikeGenerally(buf);
}

/** readAlikeByAll in JavaScript, for what the fast path leaves undecided (exported for the test that holds the two to the same verdicts). */
export function readAlikeGenerally(buf: Buffer): boolean {
  const end = buf.length;
  const at = skipValueGenerally(buf, skipSpace(buf, 0, end), end, 0, KEYS | EXACT_NUMBERS);
  return at !== -1 && skipSpace(buf, at, end) === end && isUtf8(buf);
}
