/**
 * A TCP relay in front of a backend that keeps every byte the gateway writes to it, and reads
 * them back as HTTP requests with Node's strict parser (llhttp): what a backend really received,
 * header by header, and whether the bytes parse as requests at all.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createRequestParser, kOnHeaders, kOnHeadersComplete, METHODS } from '../../core/http/parser.ts';

export interface WireRequest {
  readonly method: string;
  readonly url: string;
  /** `[name, value, ...]` as written. */
  readonly headers: readonly string[];
}

export interface WireReading {
  readonly requests: WireRequest[];
  /** The parser's complaint about a connection's bytes, if any (smuggled or broken framing). */
  readonly errors: string[];
}

export class WireRecorder {
  readonly #server: Server;
  readonly #target: { host: string; port: number };
  /** What the gateway wrote, per connection. */
  readonly #streams: Buffer[][] = [];
  readonly #sockets = new Set<Socket>();
  url = '';

  constructor(targetUrl: string) {
    const target = new URL(targetUrl);
    this.#target = { host: target.hostname, port: Number(target.port) };
    this.#server = createServer((client) => {
      const chunks: Buffer[] = [];
      this.#streams.push(chunks);
      const upstream = connect(this.#target.port, this.#target.host);
      this.#sockets.add(client).add(upstream);
      client.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        upstream.write(chunk);
      });
      upstream.pipe(client);
      const close = (): void => {
        client.destroy();
        upstream.destroy();
        this.#sockets.delete(client);
        this.#sockets.delete(upstream);
      };
      client.on('close', close).on('error', close);
      upstream.on('close', close).on('error', close);
    });
    this.url = targetUrl;
  }

  /** Listens on a free loopback port; `url` becomes the target's URL with this relay's port. */
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    const relay = new URL(this.url);
    relay.port = String((this.#server.address() as AddressInfo).port);
    this.url = relay.href;
    return this;
  }

  /** Every request written so far, parsed connection by connection. */
  read(): WireReading {
    const requests: WireRequest[] = [];
    const errors: string[] = [];
    for (const chunks of this.#streams) {
      if (chunks.length === 0) continue;
      const parser = createRequestParser(64 * 1024);
      let partial: string[] = [];
      parser[kOnHeaders] = (headers: string[]) => {
        partial.push(...headers);
      };
      parser[kOnHeadersComplete] = (_major: number, _minor: number, headers: string[] | undefined, method: number, url: string) => {
        requests.push({ method: METHODS[method] ?? '?', url, headers: [...partial, ...(headers ?? [])] });
        partial = [];
        return 0;
      };
      const result = parser.execute(Buffer.concat(chunks));
      if (typeof result !== 'number') errors.push(String((result as { code?: string }).code ?? result));
      parser.close();
    }
    return { requests, errors };
  }

  close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}
