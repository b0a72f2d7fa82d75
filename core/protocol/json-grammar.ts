/**
 * JSON's grammar (RFC 8259) as one table of byte transitions, for the scanner's fast path
 * (json-scan.wat): `GRAMMAR[state << 8 | byte]` is the next state (≥ 0) or, where a byte does more
 * than move the state (opens or closes a container, ends a string, a number or a word, or is an
 * error), an action (< 0) that the scanner's loop carries out. Strings are checked as UTF-8 on
 * the way (RFC 3629: no overlong form, no surrogate, nothing past U+10FFFF), so a value that
 * passes is valid UTF-8 without a second pass.
 *
 * Why a table: a request's tokens are small ("id", 1, "hi"), and a scanner with a branch per kind
 * of token pays more per token than per byte. Through the table, a byte costs two loads and a
 * compare whatever token it is in; only some thirty bytes of an MCP request (its quotes, braces,
 * commas, the ends of its numbers) reach an action. What a table cannot know (nesting, which
 * container a comma is in, whether a string is a key) the actions keep.
 *
 * The numbers below are the WebAssembly module's too (json-scan.wat names each where it uses
 * it); test/eras/json-scan-wasm.test.ts checks the two scanners agree.
 */

/** The scanner's states: what the next byte may be. */
export const Scan = {
  /** A value is next (white space before it allowed). */
  Value: 0,
  /** A value just ended, in a container: a comma or the container's end is next. */
  AfterValue: 1,
  /** An object just opened: a key or `}`. */
  ObjectStart: 2,
  /** A key, after an object's comma. */
  Key: 3,
  /** A key just ended: its colon. */
  Colon: 4,
  /** An array just opened: a value or `]`. */
  ArrayStart: 5,
  InString: 6,
  /** After a backslash in a string. */
  Escape: 7,
  /** After `\u` and 0, 1, 2 or 3 of its four hex digits. */
  Hex1: 8,
  Hex2: 9,
  Hex3: 10,
  Hex4: 11,
  /** A number: after its minus, its leading zero, in its integer digits, after its point, in its fraction, after `e`, after the exponent's sign, in the exponent. */
  Minus: 12,
  Zero: 13,
  Integer: 14,
  Point: 15,
  Fraction: 16,
  Exponent: 17,
  ExponentSign: 18,
  ExponentDigits: 19,
  /** Inside `true`, `false` or `null`: the letter named is the next. */
  TrueR: 20,
  TrueU: 21,
  TrueE: 22,
  FalseA: 23,
  FalseL: 24,
  FalseS: 25,
  FalseE: 26,
  NullU: 27,
  NullL1: 28,
  NullL2: 29,
  /** In a string's UTF-8 character: 1, 2 or 3 continuation bytes (80-BF) to come. */
  Tail1: 30,
  Tail2: 31,
  Tail3: 32,
  /** After E0 (next A0-BF: no overlong form), ED (next 80-9F: no surrogate), F0 (next 90-BF), F4 (next 80-8F: nothing past U+10FFFF). */
  AfterE0: 33,
  AfterED: 34,
  AfterF0: 35,
  AfterF4: 36,
} as const;

const STATES = 37;

/** What a byte does besides moving the state (the table's negative entries): -1 - the action is its index in the scanner's jump table. */
export const Act = {
  /** Not JSON. */
  Error: -1,
  /** A key's opening quote. */
  KeyStart: -2,
  /** A string's closing quote (a key's or a value's). */
  StringEnd: -3,
  /** A backslash in a string. */
  Backslash: -4,
  Comma: -5,
  OpenObject: -6,
  OpenArray: -7,
  CloseObject: -8,
  CloseArray: -9,
  /** A number's first byte (`-` or a digit). */
  NumberStart: -10,
  /** The byte after a whole number that does not go on with it: the number ended before it. */
  NumberEnd: -11,
  /** `e` or `E` in a number. */
  ExponentMark: -12,
  /** The last letter of `true`, `false` or `null`. */
  WordEnd: -13,
} as const;

export const GRAMMAR = new Int8Array(STATES * 256).fill(Act.Error);

function on(state: number, bytes: string | readonly number[], to: number): void {
  const codes = typeof bytes === 'string' ? [...bytes].map((ch) => ch.charCodeAt(0)) : bytes;
  for (const code of codes) GRAMMAR[(state << 8) | code] = to;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, k) => from + k);
}

const SPACE = ' \t\n\r';
const DIGITS = '0123456789';
const HEX = '0123456789abcdefABCDEF';
const CONTINUATION = range(0x80, 0xbf);

// White space around the structural bytes.
for (const state of [Scan.Value, Scan.AfterValue, Scan.ObjectStart, Scan.Key, Scan.Colon, Scan.ArrayStart]) on(state, SPACE, state);
// The start of a value, wherever one may be.
for (const state of [Scan.Value, Scan.ArrayStart]) {
  on(state, '"', Scan.InString);
  on(state, '{', Act.OpenObject);
  on(state, '[', Act.OpenArray);
  on(state, '-' + DIGITS, Act.NumberStart);
  on(state, 't', Scan.TrueR);
  on(state, 'f', Scan.FalseA);
  on(state, 'n', Scan.NullU);
}
on(Scan.ArrayStart, ']', Act.CloseArray);
on(Scan.AfterValue, ',', Act.Comma);
on(Scan.AfterValue, '}', Act.CloseObject);
on(Scan.AfterValue, ']', Act.CloseArray);
on(Scan.ObjectStart, '"', Act.KeyStart);
on(Scan.ObjectStart, '}', Act.CloseObject);
on(Scan.Key, '"', Act.KeyStart);
on(Scan.Colon, ':', Scan.Value);
// Strings: ASCII but a control character, a quote or a backslash stands for itself; past ASCII, UTF-8.
on(Scan.InString, range(0x20, 0x7f), Scan.InString);
on(Scan.InString, '"', Act.StringEnd);
on(Scan.InString, '\\', Act.Backslash);
on(Scan.InString, range(0xc2, 0xdf), Scan.Tail1);
on(Scan.InString, [0xe0], Scan.AfterE0);
on(Scan.InString, [...range(0xe1, 0xec), 0xee, 0xef], Scan.Tail2);
on(Scan.InString, [0xed], Scan.AfterED);
on(Scan.InString, [0xf0], Scan.AfterF0);
on(Scan.InString, range(0xf1, 0xf3), Scan.Tail3);
on(Scan.InString, [0xf4], Scan.AfterF4);
on(Scan.Tail1, CONTINUATION, Scan.InString);
on(Scan.Tail2, CONTINUATION, Scan.Tail1);
on(Scan.Tail3, CONTINUATION, Scan.Tail2);
on(Scan.AfterE0, range(0xa0, 0xbf), Scan.Tail1);
on(Scan.AfterED, range(0x80, 0x9f), Scan.Tail1);
on(Scan.AfterF0, range(0x90, 0xbf), Scan.Tail2);
on(Scan.AfterF4, range(0x80, 0x8f), Scan.Tail2);
on(Scan.Escape, '"\\/bfnrt', Scan.InString);
on(Scan.Escape, 'u', Scan.Hex1);
on(Scan.Hex1, HEX, Scan.Hex2);
on(Scan.Hex2, HEX, Scan.Hex3);
on(Scan.Hex3, HEX, Scan.Hex4);
on(Scan.Hex4, HEX, Scan.InString);
// Numbers: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
on(Scan.Minus, '0', Scan.Zero);
on(Scan.Minus, '123456789', Scan.Integer);
on(Scan.Integer, DIGITS, Scan.Integer);
for (const state of [Scan.Zero, Scan.Integer]) on(state, '.', Scan.Point);
on(Scan.Point, DIGITS, Scan.Fraction);
on(Scan.Fraction, DIGITS, Scan.Fraction);
for (const state of [Scan.Zero, Scan.Integer, Scan.Fraction]) on(state, 'eE', Act.ExponentMark);
on(Scan.Exponent, '+-', Scan.ExponentSign);
on(Scan.Exponent, DIGITS, Scan.ExponentDigits);
on(Scan.ExponentSign, DIGITS, Scan.ExponentDigits);
on(Scan.ExponentDigits, DIGITS, Scan.ExponentDigits);
// A whole number ends at the first byte that does not go on with it; from AfterValue, only a
// delimiter may follow inside a container (the general way ends a number there just the same).
for (const state of [Scan.Zero, Scan.Integer, Scan.Fraction, Scan.ExponentDigits]) {
  for (let code = 0; code < 0x100; code++) if (GRAMMAR[(state << 8) | code] === Act.Error) GRAMMAR[(state << 8) | code] = Act.NumberEnd;
}
// The words.
on(Scan.TrueR, 'r', Scan.TrueU);
on(Scan.TrueU, 'u', Scan.TrueE);
on(Scan.TrueE, 'e', Act.WordEnd);
on(Scan.FalseA, 'a', Scan.FalseL);
on(Scan.FalseL, 'l', Scan.FalseS);
on(Scan.FalseS, 's', Scan.FalseE);
on(Scan.FalseE, 'e', Act.WordEnd);
on(Scan.NullU, 'u', Scan.NullL1);
on(Scan.NullL1, 'l', Scan.NullL2);
on(Scan.NullL2, 'l', Act.WordEnd);
