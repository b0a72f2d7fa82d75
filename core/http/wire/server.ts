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
 */
import { EventEmitter } from 'node:events';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
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
}

export type WireHandler = (req: WireRequest, res: WireResponse) => void;

export class WireServer extends EventEmitter implements ConnectionOwner {
  readonly handler: WireHandler;
  readonly keepAliveSeconds: number;
  readonly maxHeaderSize: number;
  closing = false;
  readonly #net: NetServer;
  readonly #connections = new Set<Connection>();
  readonly #keepAliveMs: number;
  readonly #headersMs: number;
  readonly #requestMs: number;
  #sweeper: NodeJS.Timeout | null = null;

  constructor(handler: WireHandler, options: WireServerOptions = {}) {
    super();
    this.handler = handler;
    this.#keepAliveMs = options.keepAliveTimeoutMs ?? 65_000;
    this.#headersMs = options.headersTimeoutMs ?? 30_000;
    this.#requestMs = options.requestTimeoutMs ?? 60_000;
    this.keepAliveSeconds = Math.floor(this.#keepAliveMs / 1000);
    this.maxHeaderSize = options.maxHeaderSize ?? 16 * 1024;
    this.#net = createNetServer({ allowHalfOpen: true, noDelay: true }, (socket: Socket) => {
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

  forget(connection: Connection): void {
    this.#connections.delete(connection);
  }

  #sweep(): void {
    const now = performance.now();
    for (const connection of this.#connections) {
      if (connection.headersStartedAt !== 0 && now - connection.headersStartedAt > this.#headersMs) {
        connection.malformed(Object.assign(new Error('request head not complete in time'), { code: 'HPE_HEADERS_TIMEOUT' }));
      } else if (this.#requestMs > 0 && connection.request !== null && now - connection.requestStartedAt > this.#requestMs) {
        connection.requestTimedOut(this.#requestMs);
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
