/**
 * The one reading of a backend's answer as streamable HTTP carries it: what its head says (the
 * status, whether it is JSON, an event stream or something else, an encoding the gateway did
 * not ask for, the backend's session id), and its body as what MCP makes of it: events, one by
 * one, or one body read whole. Every exchange that reads messages (message-exchange.ts) reads
 * through it, so one media-type rule and one set of bounds hold for every one of them; only the
 * transparent pass-through (mcp/pipe.ts) takes the bytes as they come.
 *
 * Bounds, from the backend's `maxResponseBytes` (`operational.maxBackendResponseSize`):
 *  - one event, always (SseParser);
 *  - an answer's events summed, unless the exchange is a standing stream (a GET stream is no
 *    one answer: it lives as long as its client likes);
 *  - a body of JSON (or of anything in a 2xx), read whole;
 *  - a body of anything else in a refusal (an error page): its first ERROR_BODY_LIMIT bytes are
 *    kept, to word the error, and the rest is read and dropped, up to the same bound.
 */
import { Buffer } from 'node:buffer';
import { isHeaderNamed } from '../base/header-list.ts';
import { SseParser, type SseEvent } from '../protocol/sse.ts';

/** What is kept of a refusal's body that is not JSON (enough to word an error). */
export const ERROR_BODY_LIMIT = 16 * 1024;

/** `text/event-stream`, parameters allowed. */
export const EVENT_STREAM_TYPE = /^\s*text\/event-stream\s*(?:;|$)/i;
/** `application/json` and its `+json` kinds (`application/problem+json`), parameters allowed. */
export const JSON_TYPE = /^\s*application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i;

export type AnswerKind = 'events' | 'json' | 'other';

/** What a backend's answer is, from its head. */
export interface AnswerHead {
  readonly status: number;
  /** An event stream (read event by event), JSON, or anything else (no media type included). */
  readonly kind: AnswerKind;
  /** The media type as sent ('' when none; two different ones joined, as a client reads them), to word an error. */
  readonly mediaType: string;
  /** A `Content-Encoding` other than identity, which the gateway never asks for (null: none). */
  readonly encoding: string | null;
  /** The backend's `Mcp-Session-Id` (null: none). */
  readonly sessionId: string | null;
  /** The head as received (name, value, ...): for the transparent path, which passes it on. */
  readonly headers: string[];
}

/** Reads the head: only three names matter, and most headers are passed over on their length alone. */
export function readAnswerHead(status: number, headers: string[]): AnswerHead {
  let mediaType = '';
  let encoding: string | null = null;
  let sessionId: string | null = null;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    if (isHeaderNamed(name, 'content-type')) {
      // Sent twice, it is read as a client reads it: joined (`text/plain, application/json`, neither kind here).
      const value = headers[i + 1]!;
      mediaType = mediaType === '' || mediaType === value ? value : `${mediaType}, ${value}`;
    }
    else if (isHeaderNamed(name, 'mcp-session-id')) sessionId = headers[i + 1]!;
    else if (isHeaderNamed(name, 'content-encoding')) {
      const value = headers[i + 1]!.trim().toLowerCase();
      if (value !== '' && value !== 'identity') encoding = value;
    }
  }
  // The two spellings servers send, compared as they are before the expressions read any other.
  const kind: AnswerKind =
    mediaType === 'application/json' ? 'json' : mediaType === 'text/event-stream' ? 'events' : EVENT_STREAM_TYPE.test(mediaType) ? 'events' : JSON_TYPE.test(mediaType) ? 'json' : 'other';
  return { status, kind, mediaType, encoding, sessionId, headers };
}

/** Which bound an answer went past. */
export type Overflow = 'an answer' | 'an event';

/**
 * The body of one answer, as it comes: events (an event stream in a 2xx), or bytes held until
 * the end. `push` returns the events completed, or an Overflow when a bound is passed (the
 * reader then holds nothing and takes nothing more).
 */
export class AnswerReader {
  readonly head: AnswerHead;
  readonly #maxBytes: number;
  /** The events summed are bounded (an answer), not only each one (a standing stream). */
  readonly #boundsSum: boolean;
  readonly #parser: SseParser | null;
  #chunks: Buffer[] = [];
  #size = 0;
  #kept = 0;
  #over = false;

  constructor(head: AnswerHead, maxBytes: number, standing: boolean) {
    this.head = head;
    this.#maxBytes = maxBytes;
    this.#boundsSum = !standing;
    this.#parser = head.kind === 'events' && head.status >= 200 && head.status < 300 ? new SseParser(maxBytes) : null;
  }

  /** Bytes of the body received so far (every event of a stream; a refusal's in full, kept or not). */
  get size(): number {
    return this.#size;
  }

  /** Whether the body is read as events. */
  get events(): boolean {
    return this.#parser !== null;
  }

  /** Takes a chunk: the events it completes (none while a body is held), or the bound it passed. */
  push(chunk: Buffer): readonly SseEvent[] | Overflow {
    if (this.#over) return NO_EVENTS;
    this.#size += chunk.length;
    const parser = this.#parser;
    if (parser !== null) {
      if (this.#boundsSum && this.#size > this.#maxBytes) return this.#overflow('an answer');
      const events = parser.push(chunk);
      return parser.tooLarge ? this.#overflow('an event') : events;
    }
    // Any body is bounded in what comes (an endless error page ends too), not only in what is kept.
    if (this.#size > this.#maxBytes) return this.#overflow('an answer');
    if (this.#keepsAll()) this.#keep(chunk);
    else if (this.#kept < ERROR_BODY_LIMIT) this.#keep(chunk.subarray(0, ERROR_BODY_LIMIT - this.#kept));
    return NO_EVENTS;
  }

  /** The body read (empty for an event stream), once, when the answer is complete. */
  body(): Buffer {
    const chunks = this.#chunks;
    this.#chunks = [];
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.#kept);
  }

  /** What is left of an unterminated event when the stream ends ('' for a body). */
  rest(): string {
    return this.#parser === null ? '' : this.#parser.rest();
  }

  /** JSON, or anything in a 2xx, is held whole (up to the bound); another refusal's body only in part. */
  #keepsAll(): boolean {
    const { kind, status } = this.head;
    return kind === 'json' || (status >= 200 && status < 300);
  }

  #keep(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#kept += chunk.length;
  }

  #overflow(what: Overflow): Overflow {
    this.#over = true;
    this.#chunks = [];
    this.#kept = 0;
    return what;
  }
}

const NO_EVENTS: readonly SseEvent[] = [];
