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
function skipSpace(buf: Buffer, i: number, end: number): number {
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
function skipPlainString(buf: Buffer, i: number, end: number): number {
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

/**
 * Index just past the JSON value at `i` (no leading space), checked whole, or -1: when it is not
 * one, nests deeper than MAX_DEPTH (counting the `depth` containers around it), or, with
 * `unique`, some object in it has a key twice or one spelled with an escape.
 *
 * One loop, its open containers on a stack, rather than a function per kind of value calling
 * the others: a request's many small tokens cost a call and a return each that way, more than
 * their bytes.
 */
function skipValue(buf: Buffer, i: number, end: number, depth: number, unique: boolean): number {
  // A comparison's result is a boolean to the compiler: each test below is one compare, where a
  // parameter's truth took a dozen instructions (the checks of whatever else it could hold).
  const checked = unique === true;
  const outer = depth;
  let top = 0; // of keySpans
  for (;;) {
    // A value starts at i.
    if (i >= end) return -1;
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
      i = c === 0x74 ? skipWord(buf, i, end, 'true') : c === 0x66 ? skipWord(buf, i, end, 'false') : c === 0x6e ? skipWord(buf, i, end, 'null') : checked ? skipExactNumber(buf, i, end) : skipNumber(buf, i, end);
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

/** The index of the value after the key ending at `keyEnd` (its colon and spaces skipped), or -1. */
function valueAfter(buf: Buffer, keyEnd: number, end: number): number {
  const i = skipSpace(buf, keyEnd, end);
  if (i >= end || buf[i] !== COLON) return -1;
  return skipSpace(buf, i + 1, end);
}

/** Index just past the key whose opening quote is at `i`, plain (no escape), or -1. */
function skipKey(buf: Buffer, i: number, end: number): number {
  if (i >= end || buf[i] !== QUOTE) return -1;
  return skipPlainString(buf, i, end);
}

/**
 * Whether `buf` is one JSON value, valid UTF-8, that every reader reads alike: no object in it
 * has a key twice (read last-wins by JSON.parse, first-wins by some parsers) or one spelled with
 * an escape (which may spell another key), and no number is one JSON.parse rounds or overflows
 * (skipExactNumber). Bytes that pass may go on as they came.
 */
export function readAlikeByAll(buf: Buffer): boolean {
  const end = buf.length;
  // Objects end by clearing their own Set; only a scan that gave up midway can leave one here.
  if (keySets.length !== 0) keySets.length = 0;
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

/** How SDKs write an answer, with no space: `{"jsonrpc":"2.0","id":<id>,"result":{...}}` (Python's, and most)... */
const JSONRPC_FIRST = Buffer.from('{"jsonrpc":"2.0","id":');
const THEN_RESULT = Buffer.from(',"result":');
/** ...or `{"result":{...},"jsonrpc":"2.0","id":<id>}` (the TypeScript SDK's). */
const RESULT_FIRST = Buffer.from('{"result":');
const THEN_JSONRPC = Buffer.from(',"jsonrpc":"2.0","id":');

/** Whether `buf` holds the bytes of `expected` at `at`. */
function bytesAt(buf: Buffer, at: number, expected: Uint8Array): boolean {
  const n = expected.length;
  if (at + n > buf.length) return false;
  for (let j = 0; j < n; j++) if (buf[at + j] !== expected[j]) return false;
  return true;
}

/** Index just past `idText` (ASCII) written at `at` in `buf`, or -1. */
function afterId(buf: Buffer, at: number, idText: string): number {
  const n = idText.length;
  if (at + n > buf.length) return -1;
  for (let j = 0; j < n; j++) if (buf[at + j] !== idText.charCodeAt(j)) return -1;
  return at + n;
}

/** Whether only white space follows `}` at `at`, the answer's last brace. */
function closesAt(buf: Buffer, at: number): boolean {
  return at < buf.length && buf[at] === CLOSE_BRACE && skipSpace(buf, at + 1, buf.length) === buf.length;
}

/**
 * plainResultAt for an answer in one of the two spellings SDKs write (above): the same answer
 * to the same question, without the general loop's key comparisons. -2 for any other spelling
 * (a space, another order, a key more or twice), which the general loop reads.
 */
function spelledResultAt(buf: Buffer, idText: string): number {
  const end = buf.length;
  if (bytesAt(buf, 0, JSONRPC_FIRST)) {
    let i = afterId(buf, JSONRPC_FIRST.length, idText);
    if (i === -1 || !bytesAt(buf, i, THEN_RESULT)) return -2;
    i += THEN_RESULT.length;
    const members = resultMembers(buf, i, end);
    return members !== null && closesAt(buf, members.end) && isUtf8(buf) ? i + 1 : -2;
  }
  if (bytesAt(buf, 0, RESULT_FIRST)) {
    const resultAt = RESULT_FIRST.length;
    const members = resultMembers(buf, resultAt, end);
    if (members === null || !bytesAt(buf, members.end, THEN_JSONRPC)) return -2;
    const i = afterId(buf, members.end + THEN_JSONRPC.length, idText);
    return i !== -1 && closesAt(buf, i) && isUtf8(buf) ? resultAt + 1 : -2;
  }
  return -2;
}

/** Where the members of the result of a plain answer (see completeResultBytes) begin, just after its `{`; -1 for any other bytes. */
function plainResultAt(buf: Buffer, idText: string): number {
  const spelled = spelledResultAt(buf, idText);
  if (spelled !== -2) return spelled;
  const end = buf.length;
  let i = skipSpace(buf, 0, end);
  if (i >= end || buf[i] !== OPEN_BRACE || !isUtf8(buf)) return -1;
  i = skipSpace(buf, i + 1, end);
  let seen = 0; // bits: 1 jsonrpc, 2 id, 4 result
  let resultAt = -1;
  for (;;) {
    const keyStart = i + 1;
    const afterKey = skipKey(buf, i, end);
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
      i = skipValue(buf, valueStart, end, 1, false);
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
    const afterKey = skipKey(buf, i, end);
    if (afterKey === -1 || bytesAre(buf, i + 1, afterKey - 1, 'resultType')) return null;
    const valueStart = valueAfter(buf, afterKey, end);
    if (valueStart === -1) return null;
    i = skipValue(buf, valueStart, end, 2, false);
    if (i === -1) return null;
    count++;
    i = skipSpace(buf, i, end);
    if (i >= end) return null;
    if (buf[i] === CLOSE_BRACE) return { end: i + 1, count };
    if (buf[i] !== COMMA) return null;
    i = skipSpace(buf, i + 1, end);
  }
}
