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
