/**
 * Server-Sent Events, as the streamable HTTP transport carries JSON-RPC messages: an incremental
 * parser that tolerates events split across chunks (and UTF-8 split across chunks), and the
 * serialisation of one event. Only used where the gateway must read a stream (response hooks,
 * aggregation); otherwise SSE bytes are piped through untouched.
 *
 * The parser works on the bytes: each byte received is looked at once (Buffer.indexOf for the
 * line endings, which are ASCII and never part of a UTF-8 sequence), the chunks of an event not
 * yet ended are kept as they came, and an event is joined and decoded once, when its blank line
 * arrives. So an event of n bytes costs O(n) however many chunks bring it, and one that never
 * ends costs what it holds, up to `maxEventBytes`: past it the parser holds nothing more and says
 * so (`tooLarge`), and whoever reads the stream fails that backend's answer.
 */
import { Buffer } from 'node:buffer';

export interface SseEvent {
  /** `id:` of the event (the resumption cursor), or null. */
  readonly id: string | null;
  /** `event:` type, or null for the default `message`. */
  readonly event: string | null;
  /** The `data:` lines joined by `\n`; '' for comment-only blocks (keep-alives). */
  readonly data: string;
  readonly retry: string | null;
  /** The block exactly as received, blank line included: for pass-through. */
  readonly raw: string;
}

const LINE = /\r\n|\r|\n/;
const LF = 10;
const CR = 13;
const NO_EVENTS: SseEvent[] = [];

// Where the scan is, between two bytes (and two chunks): what the last line-ending bytes were.
/** In a line (or at the start of an event). */
const TEXT = 0;
/** A line just ended with \n (or \r\n). */
const AFTER_LF = 1;
/** A line just ended with \r: a \n next belongs to it. */
const AFTER_CR = 2;
/** A blank line ended with \r: the event ends here, or after a \n that follows. */
const BLANK_CR = 3;
type Scan = typeof TEXT | typeof AFTER_LF | typeof AFTER_CR | typeof BLANK_CR;

export class SseParser {
  /** The bytes of the event not ended yet, as received. */
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #scan: Scan = TEXT;
  #tooLarge = false;
  /** No event completed yet: the first may open with a byte order mark, which a stream may carry and a reader ignores. */
  #first = true;
  readonly #maxEventBytes: number;

  /** `maxEventBytes`: the largest event held (its blank line included); larger ones make the parser `tooLarge`. */
  constructor(maxEventBytes = Number.POSITIVE_INFINITY) {
    this.#maxEventBytes = maxEventBytes;
  }

  /** An event grew past `maxEventBytes`: the parser dropped it and takes nothing more. */
  get tooLarge(): boolean {
    return this.#tooLarge;
  }

  /** Bytes held of the event not ended yet. */
  get pendingBytes(): number {
    return this.#pendingBytes;
  }

  /** Feeds a chunk; returns the events it completed, in order. */
  push(chunk: Buffer | string): SseEvent[] {
    if (this.#tooLarge) return NO_EVENTS;
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    const length = bytes.length;
    let events = NO_EVENTS;
    // Where the current event's bytes start in this chunk, and the next \n and \r at or after the
    // scan position (-1: none left in the chunk), each found once per occurrence.
    let start = 0;
    let at = 0;
    let lf = -2;
    let cr = -2;
    while (at < length) {
      if (this.#scan === BLANK_CR) {
        // The event ended at the \r before `at`; a \n here is the rest of that \r\n.
        const end = bytes[at] === LF ? at + 1 : at;
        if (events === NO_EVENTS) events = [];
        if (!this.#complete(bytes, start, end, events)) return events;
        start = at = end;
        this.#scan = TEXT;
        continue;
      }
      if (lf !== -1 && lf < at) lf = bytes.indexOf(LF, at);
      if (cr !== -1 && cr < at) cr = bytes.indexOf(CR, at);
      const next = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (next === -1) {
        this.#scan = TEXT;
        break;
      }
      const scan: Scan = next > at ? TEXT : this.#scan;
      const byte = bytes[next];
      at = next + 1;
      if (scan === TEXT) {
        this.#scan = byte === LF ? AFTER_LF : AFTER_CR;
      } else if (scan === AFTER_CR && byte === LF) {
        this.#scan = AFTER_LF;
      } else if (byte === CR) {
        this.#scan = BLANK_CR;
      } else {
        // A \n right after a line's end (\n or \r\n): a blank line, the end of the event.
        if (events === NO_EVENTS) events = [];
        if (!this.#complete(bytes, start, at, events)) return events;
        start = at;
        this.#scan = TEXT;
      }
    }
    if (start < length) this.#hold(start === 0 ? bytes : bytes.subarray(start));
    return events;
  }

  /** The event made of what is held and `bytes[start, end)`: parsed into `events`, or false when it is too large. */
  #complete(bytes: Buffer, start: number, end: number, events: SseEvent[]): boolean {
    const size = this.#pendingBytes + end - start;
    if (size > this.#maxEventBytes) {
      this.#overflow();
      return false;
    }
    const piece = bytes.subarray(start, end);
    const whole = this.#pending.length === 0 ? piece : Buffer.concat([...this.#pending, piece], size);
    this.#pending = [];
    this.#pendingBytes = 0;
    let text = whole.toString('utf8');
    if (this.#first) {
      this.#first = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    events.push(parseBlock(text));
    return true;
  }

  #hold(piece: Buffer): void {
    if (this.#pendingBytes + piece.length > this.#maxEventBytes) {
      this.#overflow();
      return;
    }
    this.#pending.push(piece);
    this.#pendingBytes += piece.length;
  }

  #overflow(): void {
    this.#tooLarge = true;
    this.#pending = [];
    this.#pendingBytes = 0;
  }

  /** What is left of an unterminated event when the stream ends. */
  rest(): string {
    if (this.#pending.length === 0) return '';
    const rest = Buffer.concat(this.#pending, this.#pendingBytes).toString('utf8');
    this.#pending = [];
    this.#pendingBytes = 0;
    return rest;
  }
}

function parseBlock(raw: string): SseEvent {
  let id: string | null = null;
  let event: string | null = null;
  let retry: string | null = null;
  const data: string[] = [];
  for (const line of raw.split(LINE)) {
    if (line.length === 0 || line.charCodeAt(0) === 58 /* : comment */) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'id') id = value;
    else if (field === 'event') event = value;
    else if (field === 'retry') retry = value;
  }
  return { id, event, data: data.join('\n'), retry, raw };
}

/** Serialises an event; `data` may contain newlines (each becomes a `data:` line). */
export function formatSseEvent(event: { id?: string | null; event?: string | null; retry?: string | null; data: string }): string {
  let out = '';
  if (event.event) out += `event: ${event.event}\n`;
  if (event.id !== undefined && event.id !== null) out += `id: ${event.id}\n`;
  if (event.retry !== undefined && event.retry !== null) out += `retry: ${event.retry}\n`;
  for (const line of event.data.split(LINE)) out += `data: ${line}\n`;
  return out + '\n';
}
