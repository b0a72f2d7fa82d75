/**
 * The upstream pool's keep-alive reuse when an exchange paused reading (backpressure, or an
 * async response hook) as its response completed: the next exchange on that connection must be
 * read from the start, not wait forever on a paused socket. And a connection its parser reads
 * (core/http/handle-reading.ts): bytes a backend sends while idle, and a body read across
 * pauses, where the stream and the parser hand the socket's reads over to each other. And a
 * request the backend's kernel cannot take at once (core/http/handle-writing.ts queues the rest).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Carrier, UpstreamError, UpstreamHandler } from '../../core/upstream/transport.ts';
import { Pool } from '../../core/upstream/pool.ts';

/** Collects one response; `pauseOnData`: refuses every chunk (and never resumes). */
class Collecting implements UpstreamHandler {
  status = 0;
  body = '';
  readonly done: Promise<void>;
  #resolve!: () => void;
  #reject!: (err: Error) => void;
  constructor(readonly pauseOnData: boolean) {
    this.done = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }
  attach(_carrier: Carrier): void {}
  onHeaders(status: number): boolean {
    this.status = status;
    return true;
  }
  onData(chunk: Buffer): boolean {
    this.body += chunk.toString();
    return !this.pauseOnData;
  }
  onComplete(): void {
    this.#resolve();
  }
  onError(error: UpstreamError): void {
    this.#reject(error);
  }
}

describe('upstream pool: reuse after a paused exchange', () => {
  let server: Server;
  let origin: URL;
  let connections = 0;
  before(async () => {
    server = createServer((req, res) => res.end(`answer to ${req.url}`));
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  });
  after(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('a response that completed while its exchange held the connection paused leaves it readable for the next', async () => {
    const pool = new Pool(origin, { connections: 1, keepAliveMs: 10_000, connectTimeoutMs: 2000 });
    try {
      const first = new Collecting(true);
      pool.dispatch(first, 'GET', '/first', [], null, 2000);
      await first.done;
      assert.equal(first.body, 'answer to /first');
      const second = new Collecting(false);
      pool.dispatch(second, 'GET', '/second', [], null, 2000);
      await second.done;
      assert.equal(second.body, 'answer to /second');
      assert.equal(connections, 1, 'the one connection was reused');
    } finally {
      pool.close();
    }
  });
});

describe('upstream pool: a connection read by its parser', () => {
  /** A raw backend: `answer` writes what it likes for each request head it reads. */
  async function rawBackend(answer: (socket: Socket, request: number) => void) {
    let accepted = 0;
    const server = createNetServer((socket) => {
      accepted++;
      let seen = 0;
      let buffered = '';
      socket.on('error', () => undefined);
      socket.on('data', (d) => {
        buffered += d.toString('latin1');
        while (buffered.includes('\r\n\r\n')) {
          buffered = buffered.slice(buffered.indexOf('\r\n\r\n') + 4);
          answer(socket, seen++);
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      origin: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
      accepted: () => accepted,
      close: () => new Promise((resolve) => server.close(resolve)),
    };
  }

  it('drops a connection whose backend sent bytes while it was idle: the next request is not answered with them', async () => {
    for (const stale of ['HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nstale!', 'HTTP/1.1 200 OK\r\ncontent-len']) {
      const backend = await rawBackend((socket, request) => {
        socket.write(`HTTP/1.1 200 OK\r\ncontent-length: 6\r\nkeep-alive: timeout=10\r\n\r\nfresh${request}`);
        if (request === 0) setTimeout(() => socket.write(stale), 30);
      });
      const pool = new Pool(backend.origin, { connections: 1, keepAliveMs: 10_000, connectTimeoutMs: 2000 });
      try {
        const first = new Collecting(false);
        pool.dispatch(first, 'GET', '/first', [], null, 2000);
        await first.done;
        assert.equal(first.body, 'fresh0');
        await new Promise((resolve) => setTimeout(resolve, 100));
        const second = new Collecting(false);
        pool.dispatch(second, 'GET', '/second', [], null, 2000);
        await second.done;
        assert.equal(second.body, 'fresh0', 'answered on a new connection, as its first request');
        assert.equal(backend.accepted(), 2);
      } finally {
        pool.close();
        await backend.close();
      }
    }
  });

  it('delivers a body that arrives in many reads whole and in order while its exchange pauses and resumes', async () => {
    const body = Buffer.alloc(3 * 1024 * 1024);
    for (let i = 0; i < body.length; i++) body[i] = (i * 7 + (i >> 11)) & 0xff;
    const backend = await rawBackend((socket) => {
      socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n`);
      let at = 0;
      const next = (): void => {
        if (at >= body.length) return;
        const end = Math.min(body.length, at + 1 + ((at * 13) % 70_000));
        socket.write(body.subarray(at, end), () => setImmediate(next));
        at = end;
      };
      next();
    });
    const pool = new Pool(backend.origin, { connections: 1, keepAliveMs: 10_000, connectTimeoutMs: 2000 });
    try {
      const chunks: Buffer[] = [];
      let carrier: Carrier | null = null;
      let settle!: () => void;
      let fail!: (err: Error) => void;
      const done = new Promise<void>((resolve, reject) => ((settle = resolve), (fail = reject)));
      pool.dispatch(
        {
          attach: (c) => (carrier = c),
          onHeaders: () => true,
          onData: (chunk) => {
            chunks.push(Buffer.from(chunk));
            // Paused on every other chunk, resumed a little later.
            if (chunks.length % 2 === 0) return true;
            setTimeout(() => carrier!.resume(), 1);
            return false;
          },
          onComplete: () => settle(),
          onError: (err) => fail(err),
        },
        'GET',
        '/big',
        [],
        null,
        10_000,
      );
      await done;
      assert.ok(chunks.length > 10, `${chunks.length} chunks`);
      assert.ok(Buffer.concat(chunks).equals(body));
    } finally {
      pool.close();
      await backend.close();
    }
  });
});

describe('upstream pool: a request written to the handle', () => {
  it('a request body the backend reads late arrives whole, and the connection carries the next request after it', async () => {
    // The first request of a connection is written through the stream (it waits for the connect); the ones after it go to the handle.
    const body = Buffer.alloc(24 * 1024 * 1024);
    for (let i = 0; i < body.length; i += 4096) body[i] = (i >> 12) & 0xff;
    let connections = 0;
    const server = createServer((req, res) => {
      req.pause();
      setTimeout(() => {
        const hash = createHash('sha256');
        req.on('data', (d: Buffer) => hash.update(d));
        req.on('end', () => res.end(`${req.url} ${hash.digest('hex')}`));
        req.resume();
      }, 200);
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const pool = new Pool(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), { connections: 1, keepAliveMs: 10_000, connectTimeoutMs: 2000 });
    try {
      const first = new Collecting(false);
      pool.dispatch(first, 'POST', '/first', [], Buffer.from('hi'), 10_000);
      await first.done;
      const big = new Collecting(false);
      pool.dispatch(big, 'POST', '/big', [], body, 10_000);
      await big.done;
      assert.equal(big.body, `/big ${createHash('sha256').update(body).digest('hex')}`);
      const next = new Collecting(false);
      pool.dispatch(next, 'POST', '/next', [], Buffer.from('hi'), 10_000);
      await next.done;
      assert.equal(next.body, `/next ${createHash('sha256').update('hi').digest('hex')}`);
      assert.equal(connections, 1, 'the one connection carried them all');
    } finally {
      pool.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
