/**
 * A backend's JSON-RPC response as a client gets it, changed only where the era needs it: as the
 * backend sent it for a legacy client (isPlainResult), with `"resultType":"complete"` into its
 * result for a modern one (completeResultBytes), every other byte as sent. Reading the answer
 * (JSON.parse) and writing it anew (JSON.stringify) builds and walks every value of it on every
 * call; this validates the bytes as JSON in one pass without building anything (json-scan.ts),
 * and knows where the top-level keys and the result's keys are.
 *
 * It is strict, and gives up on anything it is not sure of: null (false) sends the caller back to
 * reading the answer and writing it anew. What passes as bytes is valid UTF-8 and valid JSON, and
 * exactly `{"jsonrpc":"2.0","id":<the request's id>,"result":{...}}` — each of the three keys once
 * and no other, none spelled with an escape, the id written as the gateway writes it (and in
 * ASCII: an id with another character never passes as bytes), and no key twice or escaped
 * anywhere in the result — so that every reader, whether it takes the first of two keys or the
 * last, reads the answer the gateway checked.
 */
import { Buffer, isUtf8 } from 'node:buffer';
import { CLOSE_BRACE, COLON, COMMA, KEYS, OPEN_BRACE, QUOTE, skipPlainString, skipSpace, skipValue, skipValueGenerally } from './json-scan.ts';
import { resultEndFast, spelledResultFast, UNDECIDED } from './json-scan-wasm.ts';

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
 * Whether the bytes from `at` to `end` are `text`, ASCII. A character past ASCII matches no byte:
 * its UTF-8 is not its character code, and a string id `"Ã©"` compared code by byte would take
 * the answer `"é"` (C3 A9) for its own. Such an id's answers are read and written anew.
 */
function bytesAre(buf: Buffer, at: number, end: number, text: string): boolean {
  if (end - at !== text.length) return false;
  for (let j = 0; j < text.length; j++) {
    const code = text.charCodeAt(j);
    if (code > 0x7f || buf[at + j] !== code) return false;
  }
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
  const member = buf[skipSpace(buf, resultAt, buf.length)] === CLOSE_BRACE ? RESULT_TYPE : RESULT_TYPE_COMMA;
  // Copied into one buffer by offsets: Buffer.concat of two subarrays makes three views more.
  const out = Buffer.allocUnsafe(buf.length + member.length);
  buf.copy(out, 0, 0, resultAt);
  member.copy(out, resultAt);
  buf.copy(out, resultAt + member.length, resultAt);
  return out;
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
  // An answer spelled as SDKs spell it, `{"jsonrpc":"2.0","id":N,"result":{…}}` (Python's, most)
  // or `{"result":{…},"jsonrpc":"2.0","id":N}` (TypeScript's), is read by comparing its fixed
  // bytes, the result scanned in the same call (json-scan-wasm.ts): the same answer as the loop
  // below gives, for the same reasons. Anything else goes the loop's way.
  const spelled = spelledResultFast(buf, idText);
  return spelled !== UNDECIDED ? spelled : plainResultAtGenerally(buf, idText);
}

/** plainResultAt's loop over the answer's members (exported for the test that holds the two ways to the same answers). */
export function plainResultAtGenerally(buf: Buffer, idText: string): number {
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
      i = plainResultEnd(buf, valueStart, end);
      if (i === -1) return -1;
    } else {
      i = skipValue(buf, valueStart, end, 1, 0);
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

/**
 * Where the result object at `at` ends, checked whole (JSON and UTF-8), or -1 when it is not
 * one, has a `resultType` of its own, or has a key twice or spelled with an escape anywhere in
 * it: such an answer is read and written anew, so that the client reads the keys JSON.parse
 * read. The fast path scans it in one call (json-scan-wasm.ts); what it leaves undecided (an
 * object of many keys, long bytes) goes the general way.
 */
function plainResultEnd(buf: Buffer, at: number, end: number): number {
  if (buf[at] !== OPEN_BRACE) return -1;
  const fast = resultEndFast(buf, at, end);
  return fast !== UNDECIDED ? fast : resultEndByMembers(buf, at, end);
}

/**
 * plainResultEnd the general way (json-scan.ts): the result checked whole with its keys, then its
 * own keys looked at for a `resultType` (the values hopped over, checked already).
 */
function resultEndByMembers(buf: Buffer, at: number, end: number): number {
  // The general way only: the fast path left this result to it (many keys, long bytes), and a
  // call of it per member would copy the bytes once a member.
  const resultEnd = skipValueGenerally(buf, at, end, 1, KEYS);
  if (resultEnd === -1 || !isUtf8(buf.subarray(at, resultEnd))) return -1;
  let i = skipSpace(buf, at + 1, end);
  while (buf[i] !== CLOSE_BRACE) {
    const afterKey = skipKey(buf, i, end);
    if (afterKey === -1 || bytesAre(buf, i + 1, afterKey - 1, 'resultType')) return -1;
    i = skipSpace(buf, skipValueGenerally(buf, valueAfter(buf, afterKey, end), end, 2, 0), end);
    if (buf[i] === COMMA) i = skipSpace(buf, i + 1, end);
  }
  return resultEnd;
}
