/**
 * Gatehouse's own HTTP/1.1 server, on `net` and Node's native llhttp parser. It does what the
 * gateway needs of node:http — keep-alive, pipelining in order, chunked bodies both ways,
 * `Expect: 100-continue`, header size and time limits, graceful close — with less work per
 * request (measured in bench/README.md): one request and one response object, no stream
 * machinery, and the response head and body in one write.
 *
 * One timer for all connections enforces the time limits: a request head must be complete within
 * `headersTimeoutMs` (slow-loris), the whole request, body included, within `requestTimeoutMs`
 * (a body that stalls holds a connection no longer than that), and an idle keep-alive
 * connection closes after `keepAliveTimeoutMs`.
 *
 * Resource limits an operator sets (`server.*` in the config): at most `maxConnections` open
 * connections (one more is answered 503 and closed, so a client learns why rather than hanging);
 * at most `maxPipelinedRequests` unanswered requests per connection (past it the connection
 * stops being read); and a client that stops reading is dropped rather than buffered for: its
 * connection closes when more than `maxStreamBuffer` bytes are still waiting for it when a
 * response (an SSE stream, typically) writes again, or when what is waiting has not moved for
 * `sendTimeoutMs` (nginx's send_timeout).
 */
import { Buffer } from 'node:buffer';
import { EventEmitter } from 'node:events';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Connection, type ConnectionOwner } from './client-connection.ts';
import type { WireRequest } from './request.ts';
import type { WireResponse } from './response.ts';

export interface WireServerOptions {
  /** Idle keep-alive connections close after this (default 65 s, above common load balancers'). */
  keepAliveTimeoutMs?: number;
  /** A request head must arrive within this (default 30 s). */
  headersTimeoutMs?: number;
  /** A whole request, head and body, must arrive within this (default 60 s; 0: no limit). */
  requestTimeoutMs?: number;
  /** Largest request head, bytes (default 16 KiB, as node:http). */
  maxHeaderSize?: number;
  /** Open connections at most (default 10,000; 0: no limit). */
  maxConnections?: number;
  /** Unanswered requests per connection before it stops being read (default 16). */
  maxPipelinedRequests?: number;
  /** Bytes waiting for a client past which a response's next write drops the connection (default 4 MiB). */
  maxStreamBuffer?: number;
  /** How long bytes waiting for a client may go without moving before the connection is dropped (default 60 s; 0: no limit). */
  sendTimeoutMs?: number;
}

/** Why the server dropped or refused a connection (the `dropped` event). */
export type DropReason = 'max_connections' | 'stream_buffer' | 'send_timeout';

const TOO_MANY_CONNECTIONS_BODY = JSON.stringify({
  error: 'too_many_connections',
  error_description: 'the server has as many connections open as it allows (server.maxConnections): retry later',
});
const TOO_MANY_CONNECTIONS =
  'HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n' +
  `content-length: ${Buffer.byteLength(TOO_MANY_CONNECTIONS_BODY)}\r\nconnection: close\r\n\r\n${TOO_MANY_CONNECTIONS_BODY}`;

function ignore(): void {}

export type WireHandler = (req: WireRequest, res: WireResponse) => void;

export class WireServer extends EventEmitter implements ConnectionOwner {
  readonly handler: WireHandler;
  readonly keepAliveSeconds: number;
  readonly maxHeaderSize: number;
  readonly maxPipelinedRequests: number;
  readonly maxStreamBuffer: number;
  closing = false;
  readonly #net: NetServer;
  readonly #connections = new Set<Connection>();
  readonly #keepAliveMs: number;
  readonly #headersMs: number;
  readonly #requestMs: number;
  readonly #sendMs: number;
  readonly #maxConnections: number;
  #sweeper: NodeJS.Timeout | null = null;

  constructor(handler: WireHandler, options: WireServerOptions = {}) {
    super();
    this.handler = handler;
    this.#keepAliveMs = options.keepAliveTimeoutMs ?? 65_000;
    this.#headersMs = options.headersTimeoutMs ?? 30_000;
    this.#requestMs = options.requestTimeoutMs ?? 60_000;
    this.keepAliveSeconds = Math.floor(this.#keepAliveMs / 1000);
    this.maxHeaderSize = options.maxHeaderSize ?? 16 * 1024;
    this.maxPipelinedRequests = options.maxPipelinedRequests ?? 16;
    this.maxStreamBuffer = options.maxStreamBuffer ?? 4 * 1024 * 1024;
    this.#sendMs = options.sendTimeoutMs ?? 60_000;
    this.#maxConnections = options.maxConnections ?? 10_000;
    this.#net = createNetServer({ allowHalfOpen: true, noDelay: true }, (socket: Socket) => {
      if (this.#maxConnections > 0 && this.#connections.size >= this.#maxConnections) {
        this.#refuse(socket);
        return;
      }
      this.#connections.add(new Connection(socket, this));
    });
    this.#net.on('error', (err) => this.emit('error', err));
  }

  listen(port: number, host: string, callback: () => void): this {
    this.#net.listen(port, host, () => {
      this.#sweeper = setInterval(() => this.#sweep(), 1000);
      this.#sweeper.unref();
      callback();
    });
    return this;
  }

  address(): AddressInfo | string | null {
    return this.#net.address();
  }

  /** Open connections (the `gatehouse_connections_open` gauge). */
  get connectionCount(): number {
    return this.#connections.size;
  }

  forget(connection: Connection): void {
    this.#connections.delete(connection);
  }

  /** A connection was cut for a limit (a stream's client stopped reading). */
  dropped(reason: DropReason): void {
    this.emit('dropped', reason);
  }

  /** One connection too many: a 503 that says so, and close (the socket never reaches a parser). */
  #refuse(socket: Socket): void {
    socket.on('error', ignore);
    socket.end(TOO_MANY_CONNECTIONS);
    // Whatever the client sends is read and dropped, so its FIN ends the socket at once; one that
    // never reads its refusal or never closes does not keep it past 5 s.
    socket.resume();
    const timer = setTimeout(() => socket.destroy(), 5_000);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
    this.emit('dropped', 'max_connections');
  }

  #sweep(): void {
    const now = performance.now();
    for (const connection of this.#connections) {
      if (connection.headersStartedAt !== 0 && now - connection.headersStartedAt > this.#headersMs) {
        connection.malformed(Object.assign(new Error('request head not complete in time'), { code: 'HPE_HEADERS_TIMEOUT' }));
      } else if (this.#requestMs > 0 && connection.request !== null && now - connection.requestStartedAt > this.#requestMs) {
        connection.requestTimedOut(this.#requestMs);
      } else if (this.#sendMs > 0 && connection.progress.blockedSince !== 0 && now - connection.progress.blockedSince > this.#sendMs) {
        // What is waiting for the client has not moved for that long: a reader that stopped is
        // dropped (a slow one that still takes bytes gets another period).
        if (connection.progress.sentSinceBlocked()) connection.progress.blockedSince = now;
        else {
          connection.destroy();
          this.dropped('send_timeout');
        }
      } else if (connection.idle && now - connection.lastActive > this.#keepAliveMs) {
        connection.destroy();
      }
    }
  }

  /** Stops accepting; `callback` once every connection is closed. Connections in use finish first. */
  close(callback?: (err?: Error) => void): this {
    this.closing = true;
    this.#net.close((err) => {
      if (this.#sweeper !== null) clearInterval(this.#sweeper);
      callback?.(err);
    });
    this.closeIdleConnections();
    return this;
  }

  closeIdleConnections(): void {
    for (const connection of this.#connections) if (connection.idle) connection.socket.end();
  }

  closeAllConnections(): void {
    for (const connection of this.#connections) connection.destroy();
  }
}
