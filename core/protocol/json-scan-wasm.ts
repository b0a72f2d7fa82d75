/**
 * The JSON scanner's fast path: json-scan.wat, compiled WebAssembly, run over a copy of the bytes
 * in its own memory. json-scan.ts and answer-bytes.ts ask it first and go their general way
 * (JavaScript) only when it does not decide: bytes longer than MAX_INPUT, an object with more
 * than 16 keys (whose keys the general way tells apart with a Set), an answer spelled otherwise.
 *
 * Why: the checks run on every aggregated and bridged request, over the client's request and
 * the backend's answer. In JavaScript, V8 re-checks the buffer (its map, length, base) at each
 * byte and boxes the loop's state at each token: ~65 instructions a byte for an MCP request, all
 * told. Compiled, the module's loop takes 9 a byte, an action (a quote, a brace, a comma) a few
 * dozen, and the copy in some 180 a call: the bench's request 6,526 → 2,990, its answer
 * 6,411 → 3,187 (settled, under callgrind).
 *
 * The module's memory holds one input at a time (the scans are synchronous): at most MAX_INPUT
 * bytes, so what it keeps is bounded whatever a client or a backend sends.
 */
import { readFileSync } from 'node:fs';
import { GRAMMAR } from './json-grammar.ts';

/** Where the bytes scanned begin in the module's memory (json-scan.wat, Memory). */
const INPUT = 20480;
/** How long `"resultType"` is, the key a result may not have of its own (json-scan.wat, Memory). */
const RESULT_TYPE_LENGTH = 12;
/** Where a request's id is written for spelledResultFast, and how long it may be (json-scan.wat, Memory). */
const ID = 19600;
const MAX_ID = INPUT - ID;
/** Longest input the fast path scans: 256 KiB (MCP requests and answers are mostly far smaller). */
export const MAX_INPUT = 256 * 1024;
const PAGE = 65536;

/** The part of WebAssembly's API used here (the project's TypeScript libraries, ES2023 without the DOM, do not declare it). */
declare namespace WebAssembly {
  class Module {
    constructor(bytes: Uint8Array);
  }
  class Instance {
    constructor(module: Module, imports: object);
    readonly exports: object;
  }
  class Memory {
    readonly buffer: ArrayBuffer;
    grow(pages: number): number;
  }
}

interface ScanExports {
  readonly memory: WebAssembly.Memory;
  skip(i: number, end: number, depth: number, checks: number, refuse: number): number;
  readAlike(length: number): number;
  spelledResult(length: number, idLength: number): number;
}

const module = new WebAssembly.Module(readFileSync(new URL('./json-scan.wasm', import.meta.url)));
const scanner = new WebAssembly.Instance(module, {}).exports as unknown as ScanExports;
let memory = new Uint8Array(scanner.memory.buffer);
memory.set(GRAMMAR, 0);

/** The memory holds `length` input bytes; false past MAX_INPUT. */
function room(length: number): boolean {
  if (length > MAX_INPUT) return false;
  if (INPUT + length > memory.length) {
    scanner.memory.grow(Math.ceil((INPUT + length - memory.length) / PAGE));
    memory = new Uint8Array(scanner.memory.buffer); // the old view is detached by the growth
  }
  return true;
}

/** 1 for JSON's white space. */
const SPACE = new Uint8Array(256);
for (const c of [0x20, 0x0a, 0x0d, 0x09]) SPACE[c] = 1;

/** Undecided: the caller's general path is to scan the bytes. */
export const UNDECIDED = -2;

/**
 * Whether `buf` is one JSON value (white space around it allowed), valid UTF-8, that every reader
 * reads alike (json-scan.ts, readAlikeByAll): 1 or 0, or UNDECIDED.
 */
export function readAlikeFast(buf: Buffer): number {
  if (!room(buf.length)) return UNDECIDED;
  memory.set(buf, INPUT);
  return scanner.readAlike(buf.length);
}

/**
 * json-scan.ts's skipValue over `buf` from `i` (not white space) to `end`, with `checks`: the index
 * just past the value, -1, or UNDECIDED. Strings are checked as UTF-8 too.
 */
export function skipValueFast(buf: Buffer, i: number, end: number, depth: number, checks: number): number {
  // Only the bytes from i to end are copied (a caller may scan many values of one body), and
  // only bytes that are the buffer's (end within it) and that start a value (the module would
  // skip white space first; the general way refuses it).
  if (end > buf.length || i >= end || !room(end - i) || SPACE[buf[i]!] === 1) return UNDECIDED;
  memory.set(i === 0 && end === buf.length ? buf : new Uint8Array(buf.buffer, buf.byteOffset + i, end - i), INPUT);
  const at = scanner.skip(INPUT, INPUT + end - i, depth, checks, 0);
  return at < 0 ? at : at - INPUT + i;
}

/**
 * The end of the result object at `at` in `buf`, a backend's answer (answer-bytes.ts): checked
 * whole with its keys (KEYS), -1 also when `"resultType"` is among its own keys, or UNDECIDED.
 */
export function resultEndFast(buf: Buffer, at: number, end: number): number {
  if (end > buf.length || at >= end || !room(end - at)) return UNDECIDED;
  memory.set(new Uint8Array(buf.buffer, buf.byteOffset + at, end - at), INPUT);
  const resultEnd = scanner.skip(INPUT, INPUT + end - at, 1, 1, RESULT_TYPE_LENGTH);
  return resultEnd < 0 ? resultEnd : resultEnd - INPUT + at;
}

/**
 * answer-bytes.ts's question of `buf`, a backend's answer to the request whose id is written
 * `idText`, when it is spelled as SDKs spell it (json-scan.wat, spelledResult): where its result's
 * members begin, -1 when its result is not a plain one, UNDECIDED for anything else (another
 * spelling, id or key, an id past ASCII, bytes after the answer, a result of many keys), which
 * the caller reads its general way.
 */
export function spelledResultFast(buf: Buffer, idText: string): number {
  const idLength = idText.length;
  if (idLength > MAX_ID || !room(buf.length)) return UNDECIDED;
  for (let j = 0; j < idLength; j++) {
    const code = idText.charCodeAt(j);
    if (code > 0x7f) return UNDECIDED; // its UTF-8 is not its character code (answer-bytes.ts, bytesAre)
    memory[ID + j] = code;
  }
  memory.set(buf, INPUT);
  const at = scanner.spelledResult(buf.length, idLength);
  return at >= 0 ? at - INPUT : at === -1 ? -1 : UNDECIDED;
}
