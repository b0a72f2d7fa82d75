/**
 * The floor of a proxy in a Node process, measured in the same run as nginx and the gateway: what
 * Node itself costs to move one request and its answer through, before any proxy's own work.
 *
 * - `relay`: a TCP relay. Each client connection gets its own backend connection and bytes go
 *   both ways as they come, parsed by no one: two socket reads and two socket writes a request,
 *   libuv and the stream machinery around them. No Node proxy can cost less.
 * - `http`: the least an HTTP proxy does on top: each request parsed with llhttp (Node's own
 *   parser, reached as the gateway reaches it: core/http/parser.ts), its head written anew with
 *   the body in one write to a keep-alive backend connection of its own, the answer parsed the
 *   same way and written back in one write. No validation, no pool, no timeouts: a floor, not a
 *   proxy to run.
 *
 * As a child process: `node --import tsx bench/load/floor-proxy.ts <relay|http> <backend origin>`
 * binds 127.0.0.1 on a free port and prints `LISTENING <port>`.
 */
import { connect, createServer, type Socket } from 'node:net';
import { pathToFileURL } from 'node:url';
import {
  createRequestParser,
  createResponseParser,
  kOnBody,
  kOnHeaders,
  kOnHeadersComplete,
  kOnMessageBegin,
  kOnMessageComplete,
  METHODS,
  type NativeParser,
} from '../../core/http/parser.ts';
import { spawnNodeScript, startTimeout } from './process.ts';
import type { Target } from './target.ts';

export type FloorKind = 'relay' | 'http';

/** Starts a floor proxy child in front of `backendUrl`; resolves once it listens. */
export async function startFloorProxy(kind: FloorKind, backendUrl: string): Promise<Target> {
  const url = new URL(backendUrl);
  const child = spawnNodeScript(`floor-${kind}`, new URL(import.meta.url).pathname, [kind, url.origin], { profile: `floor-${kind}` });
  const m = await child.waitForLine(/^LISTENING (\d+)$/, startTimeout(15_000));
  return { url: `http://127.0.0.1:${m[1]}${url.pathname}`, pids: [child.pid], stop: () => child.stop() };
}

function relay(client: Socket, host: string, port: number): void {
  const backend = connect(port, host);
  backend.setNoDelay(true);
  client.setNoDelay(true);
  client.on('data', (chunk) => backend.write(chunk));
  backend.on('data', (chunk) => client.write(chunk));
  const close = (): void => {
    client.destroy();
    backend.destroy();
  };
  client.on('close', close).on('error', close);
  backend.on('close', close).on('error', close);
}

/** One parsed message at a time: its head as a string, its body as one buffer. */
class Framer {
  head = '';
  body: Buffer[] = [];
  readonly parser: NativeParser;

  constructor(parser: NativeParser, onHead: (headers: string[], method: number, url: string, status: number, reason: string) => string, onMessage: (bytes: Buffer) => void) {
    this.parser = parser;
    parser[kOnMessageBegin] = () => {
      this.body = [];
    };
    parser[kOnHeaders] = () => {};
    parser[kOnHeadersComplete] = (_ma: number, _mi: number, headers: string[], method: number, url: string, status: number, reason: string) => {
      this.head = onHead(headers, method, url, status, reason);
      return 0;
    };
    parser[kOnBody] = (chunk: Buffer) => {
      this.body.push(Buffer.from(chunk));
    };
    parser[kOnMessageComplete] = () => {
      const body = this.body.length === 1 ? this.body[0]! : Buffer.concat(this.body);
      let head = this.head + 'content-length: ' + body.length + '\r\n\r\n';
      const bytes = Buffer.allocUnsafe(Buffer.byteLength(head, 'latin1') + body.length);
      const at = bytes.write(head, 0, 'latin1');
      body.copy(bytes, at);
      head = '';
      onMessage(bytes);
    };
  }
}

function headerLines(headers: string[]): string {
  let lines = '';
  for (let i = 0; i < headers.length; i += 2) {
    const lower = headers[i]!.toLowerCase();
    if (lower === 'content-length' || lower === 'connection' || lower === 'host') continue;
    lines += headers[i] + ': ' + headers[i + 1] + '\r\n';
  }
  return lines;
}

function httpProxy(client: Socket, host: string, port: number): void {
  const backend = connect(port, host);
  backend.setNoDelay(true);
  client.setNoDelay(true);
  const authority = `${host}:${port}`;
  const request = new Framer(
    createRequestParser(16 * 1024),
    (headers, method, url) => `${METHODS[method]} ${url} HTTP/1.1\r\nhost: ${authority}\r\n` + headerLines(headers),
    (bytes) => backend.write(bytes),
  );
  const response = new Framer(
    createResponseParser(),
    (headers, _m, _u, status, reason) => `HTTP/1.1 ${status} ${reason}\r\nconnection: keep-alive\r\n` + headerLines(headers),
    (bytes) => client.write(bytes),
  );
  client.on('data', (chunk) => request.parser.execute(chunk));
  backend.on('data', (chunk) => response.parser.execute(chunk));
  const close = (): void => {
    client.destroy();
    backend.destroy();
  };
  client.on('close', close).on('error', close);
  backend.on('close', close).on('error', close);
}

function main(kind: string, origin: string): void {
  const { hostname, port } = new URL(origin);
  const serve = kind === 'relay' ? relay : httpProxy;
  const server = createServer({ noDelay: true }, (client) => serve(client, hostname, Number(port)));
  server.listen(0, '127.0.0.1', () => {
    const addr = server.address();
    process.stdout.write(`LISTENING ${typeof addr === 'object' && addr !== null ? addr.port : 0}\n`);
  });
  process.on('SIGTERM', () => process.exit(0));
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [kind, origin] = process.argv.slice(2);
  if ((kind !== 'relay' && kind !== 'http') || origin === undefined) {
    process.stderr.write('usage: floor-proxy.ts <relay|http> <backend origin>\n');
    process.exit(2);
  }
  main(kind, origin);
}
