/**
 * Server-Sent Events, as the streamable HTTP transport carries JSON-RPC messages: an incremental
 * parser that tolerates events split across chunks (and UTF-8 split across chunks), and the
 * serialisation of one event. Only used where the gateway must read a stream (response hooks,
 * aggregation); otherwise SSE bytes are piped through untouched.
 */
import { StringDecoder } from 'node:string_decoder';

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

export class SseParser {
  readonly #decoder = new StringDecoder('utf8');
  #buffer = '';
  /** Where the search for a blank line resumes: a large event arriving in many chunks is scanned once. */
  #scanFrom = 0;

  /** Feeds a chunk; returns the events it completed, in order. */
  push(chunk: Buffer | string): SseEvent[] {
    this.#buffer += typeof chunk === 'string' ? chunk : this.#decoder.write(chunk);
    const events: SseEvent[] = [];
    for (;;) {
      const end = blockEnd(this.#buffer, this.#scanFrom);
      if (end === -1) {
        this.#scanFrom = Math.max(0, this.#buffer.length - 3);
        break;
      }
      events.push(parseBlock(this.#buffer.slice(0, end)));
      this.#buffer = this.#buffer.slice(end);
      this.#scanFrom = 0;
    }
    return events;
  }

  /** What is left of an unterminated event when the stream ends. */
  rest(): string {
    return this.#buffer + this.#decoder.end();
  }
}

/** Index just after the blank line that ends the first event block, or -1. */
function blockEnd(buffer: string, from: number): number {
  for (let i = from; i < buffer.length; i++) {
    const c = buffer.charCodeAt(i);
    if (c !== 10 && c !== 13) continue;
    // End of a line at i; a blank line follows when the next line ending starts right after it.
    let next = i + 1;
    if (c === 13) {
      if (next === buffer.length) return -1; // a lone \r at the end may be the first half of \r\n
      if (buffer.charCodeAt(next) === 10) next++;
    }
    if (next >= buffer.length) return -1;
    const d = buffer.charCodeAt(next);
    if (d === 10) return next + 1;
    if (d === 13) {
      if (next + 1 === buffer.length) return -1;
      return buffer.charCodeAt(next + 1) === 10 ? next + 2 : next + 1;
    }
  }
  return -1;
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
