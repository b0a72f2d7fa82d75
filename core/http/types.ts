/**
 * The request and response as the core and plugins see them: the parts of node:http's
 * IncomingMessage and ServerResponse the gateway uses. Both Gatehouse's own server
 * (core/http/wire/) and node:http provide them, so either can serve.
 */
import type { EventEmitter } from 'node:events';
import type { OutgoingHttpHeader, OutgoingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';

export interface HttpRequest extends EventEmitter {
  readonly method?: string | undefined;
  readonly url?: string | undefined;
  /** `[name, value, name, value, ...]` as received. */
  readonly rawHeaders: string[];
  /** By lower-case name (built on first use). */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly socket: Socket;
  /** The whole message, body included, has been received. */
  readonly complete: boolean;
  pause(): this;
  /**
   * Hands the body to `reader` rather than as events (Gatehouse's own server has it; node:http's
   * request does not): body.ts reads the MCP endpoint's bodies this way.
   */
  readInto?(reader: BodyReader): void;
}

/**
 * Reads a request body without events, as `data` / `end` / `error` / `close` would give it: the
 * chunks in order, then the end, or why there will be none. Called once the reader is attached
 * (never before its `readInto` returns), and not again after `end` or `failed`.
 */
export interface BodyReader {
  /** False: it takes no more (it refused the body); what arrives is then kept, as by a paused request. */
  chunk(chunk: Buffer): boolean;
  end(): void;
  /** The request ended before its body did: the error it ended with (`error`), or undefined when the client just left (`close`). */
  failed(error: Error | undefined): void;
}

/** As node:http takes them: a flat `[name, value, ...]` list, or an object. */
export type HttpHeaders = OutgoingHttpHeaders | OutgoingHttpHeader[];

export interface HttpResponse extends EventEmitter {
  statusCode: number;
  readonly headersSent: boolean;
  readonly writableEnded: boolean;
  readonly writableFinished: boolean;
  readonly destroyed: boolean;
  writeHead(status: number, headers?: HttpHeaders): this;
  setHeader(name: string, value: string | number): this;
  write(chunk: Buffer | string): boolean;
  end(chunk?: Buffer | string): this;
  flushHeaders(): void;
  destroy(): void;
}
