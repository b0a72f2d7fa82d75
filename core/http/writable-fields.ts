/**
 * The last check before a header goes onto a wire: a field name or value may hold no control
 * character other than HTAB (so no CR, LF or NUL), no DEL, and nothing past latin1 (a head is
 * encoded latin1, where `\u010d` would become a CR). The same rule node:http applies.
 *
 * Every message of a connection, and of every connection of one client kind, carries mostly the
 * same header values (content type, accept, protocol version, session id, a credential). A
 * regular expression test costs 350-600 instructions a header under callgrind (the call into
 * irregexp, whatever the length), and a head of the gateway writes some fifteen of them per
 * request either way: 6 % of a transparent request. So each writer remembers, per position in
 * its head, the last text it found writable; the next text at that position is compared with it
 * first. Text equal to one that passed the check passes it too: the compare is the check, and it
 * fails fast on another length. Only text that differs is checked, short text by a loop over
 * its characters (a fraction of the expression's call), longer text by the expression.
 *
 * The positions hold references to what was written last (a bearer token toward a backend, say)
 * until something else is written there: in process memory only, like the caches that hold the
 * same tokens, never logged.
 */

const UNWRITABLE = /[^\t\x20-\x7e\x80-\xff]/;

/**
 * Text up to this length is checked a character at a time: some six instructions a character
 * against the expression's call, which costs what some 60 characters do (a request id, a
 * session id, a content length: the values that differ on every head are short).
 */
const LOOPED_LENGTH = 48;

/** Whether `text` may be written as a header name or value (no memory of it). */
export function isWritableField(text: string): boolean {
  if (typeof text !== 'string' || text.length > LOOPED_LENGTH) return !UNWRITABLE.test(text);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 ? c !== 0x09 : c === 0x7f || c > 0xff) return false;
  }
  return true;
}

/** One writer's memory of what it last found writable, per position in its head. */
export class WritableFields {
  readonly #last: string[];
  readonly #mask: number;

  /** `positions`: a power of two; positions past it share slots (still correct, just compared in vain). */
  constructor(positions: number) {
    this.#last = new Array<string>(positions).fill('');
    this.#mask = positions - 1;
  }

  /** Whether `text`, written at `position` of a head, may be written. */
  check(text: string, position: number): boolean {
    const slot = position & this.#mask;
    if (text === this.#last[slot]) return true;
    if (!isWritableField(text)) return false;
    // Strings only: `===` compares a string's content, but another value (an array a plugin put
    // in a header list) by identity, and its content could change before the next write.
    if (typeof text === 'string') this.#last[slot] = text;
    return true;
  }
}
