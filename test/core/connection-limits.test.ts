/**
 * The limits of Gatehouse's own HTTP/1.1 server over raw sockets: a connection past
 * `maxConnections` is answered 503 and closed; `maxPipelinedRequests` unanswered requests stop a
 * connection being read; a client that stops reading is dropped — at once when a writer that
 * ignores backpressure piles up more than `maxStreamBuffer`, after `sendTimeoutMs` when what
 * waits does not move — while a slow client that keeps reading is not.
 */
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { afterEach, describe, it } from 'node:test';
import type { WireRequest } from '../../core/http/wire/request.ts';
import type { WireResponse } from '../../core/http/wire/response.ts';
import { WireServer, type DropReason, type WireServerOptions } from '../../core/http/wire/server.ts';
import { closeAll, rawClient as open, until } from './helpers/raw-clients.ts';

type Handler = (req: WireRequest, res: WireResponse) => void;

let server: WireServer | null = null;

async function start(options: WireServerOptions, handler: Handler): Promise<{ port: number; dropped: DropReason[] }> {
  const dropped: DropReason[] = [];
  server = new WireServer(handler, options);
  server.on('dropped', (reason: DropReason) => dropped.push(reason));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, dropped };
}

/** Everything the server sends until it closes the connection (or `timeoutMs`). */
function readAll(socket: Socket, timeoutMs = 3000): Promise<string> {
  return new Promise((resolve) => {
    let received = '';
    const timer = setTimeout(() => resolve(received), timeoutMs);
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
  });
}

afterEach(async () => {
  const s = server;
  server = null;
  await closeAll(s);
});

describe('connection limits of the own HTTP server', () => {
  it('answers a connection past maxConnections with a 503 that says why, and serves again once one closes', async () => {
    const { port, dropped } = await start({ maxConnections: 2 }, (_req, res) => res.end('ok'));
    const first = await open(port);
    const second = await open(port);
    await until(() => server!.connectionCount === 2, 2000, 'two connections');
    const third = await open(port);
    const refusal = await readAll(third);
    assert.match(refusal, /^HTTP\/1\.1 503 /);
    assert.match(refusal, /retry-after: 1/i);
    assert.match(refusal, /"error":"too_many_connections"/);
    assert.match(refusal, /server\.maxConnections/);
    assert.deepEqual(dropped, ['max_connections']);
    // The two connections inside the limit are served as usual.
    const answer = readAll(first, 500);
    first.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.match(await answer, /^HTTP\/1\.1 200 [^]*ok$/);
    second.destroy();
    await until(() => server!.connectionCount === 1, 2000, 'the second connection to close');
    const fourth = await open(port);
    const served = readAll(fourth, 500);
    fourth.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.match(await served, /^HTTP\/1\.1 200 /);
  });

  it('stops reading a connection at maxPipelinedRequests unanswered requests', async () => {
    const waiting: WireResponse[] = [];
    const { port } = await start({ maxPipelinedRequests: 4 }, (_req, res) => waiting.push(res));
    const socket = await open(port);
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    for (let i = 0; i < 20; i++) {
      socket.write(`GET /p${i} HTTP/1.1\r\nHost: x\r\n\r\n`);
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(waiting.length >= 4 && waiting.length < 12, `${waiting.length} requests reached the handler before any was answered`);
    while (waiting.length < 20 || waiting.some((r) => !r.writableEnded)) {
      for (const r of waiting) if (!r.writableEnded) r.end('ok');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await until(() => (received.match(/HTTP\/1\.1 200/g) ?? []).length === 20, 3000, 'twenty answers');
  });

  it('drops a client that stops reading while a writer ignoring backpressure piles up more than maxStreamBuffer', async () => {
    let closed = false;
    let written = 0;
    const { port, dropped } = await start({ maxStreamBuffer: 256 * 1024, sendTimeoutMs: 0 }, (_req, res) => {
      res.writeHead(200, ['content-type', 'text/event-stream']);
      const event = `data: ${'x'.repeat(16 * 1024)}\n\n`;
      const timer = setInterval(() => {
        // An event source that does not wait for 'drain' (as the gateway's own notifications do).
        for (let i = 0; i < 16; i++) {
          res.write(event);
          written += event.length;
        }
      }, 2);
      res.on('close', () => {
        closed = true;
        clearInterval(timer);
      });
    });
    const socket = await open(port);
    socket.write('GET /events HTTP/1.1\r\nHost: x\r\n\r\n');
    socket.pause(); // reads nothing more
    await until(() => closed, 10_000, 'the stream to be dropped');
    assert.deepEqual(dropped, ['stream_buffer']);
    // Dropped once the socket's own buffer (not the kernel's) passed the limit: what was written
    // is what the kernel took plus at most the limit and one burst.
    assert.ok(written < 64 * 1024 * 1024, `${written} bytes were written before the drop`);
  });

  it('drops a client that takes nothing for sendTimeoutMs, and keeps one that reads slowly', async () => {
    const closed = new Set<string>();
    const { port, dropped } = await start({ sendTimeoutMs: 1500, maxStreamBuffer: 1024 * 1024 * 1024 }, (req, res) => {
      res.writeHead(200, ['content-type', 'text/event-stream']);
      const event = Buffer.alloc(64 * 1024, 'y');
      // A well-behaved writer: waits for 'drain', so nothing piles up; only the clock can tell.
      const pump = (): void => {
        while (!res.writableEnded && !res.destroyed) if (!res.write(event)) return void res.once('drain', pump);
      };
      pump();
      res.on('close', () => closed.add(req.url));
    });
    const stalled = await open(port);
    stalled.write('GET /stalled HTTP/1.1\r\nHost: x\r\n\r\n');
    stalled.pause();
    const slow = await open(port);
    slow.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
    slow.pause();
    // The slow reader takes a little every 500 ms: the bytes waiting for it keep moving.
    const reader = setInterval(() => {
      slow.resume();
      setTimeout(() => slow.pause(), 20);
    }, 500);
    try {
      await until(() => closed.has('/stalled'), 8000, 'the stalled client to be dropped');
      assert.deepEqual(dropped, ['send_timeout']);
      await new Promise((resolve) => setTimeout(resolve, 2500));
      assert.equal(closed.has('/slow'), false, 'a client that keeps reading, however slowly, is not dropped');
    } finally {
      clearInterval(reader);
    }
  });
});

describe('a client that stops reading, or reads slowly, in the cases review found', () => {
  it('keeps a slow reader of one large answer: the bytes libuv has yet to write count as progress', async () => {
    let dropped = false;
    const body = Buffer.alloc(24 * 1024 * 1024, 'z');
    const { port, dropped: reasons } = await start({ sendTimeoutMs: 1500 }, (_req, res) => {
      res.on('close', () => (dropped = !res.writableFinished));
      res.end(body); // one write: writableLength only moves when all of it is out
    });
    const socket = await open(port);
    let received = 0;
    // One read (at most 64 KiB) every 10 ms: several seconds for the whole answer, more than the
    // send timeout, with bytes taken all along.
    socket.on('data', (d: Buffer) => {
      received += d.length;
      socket.pause();
    });
    socket.write('GET /big HTTP/1.1\r\nHost: x\r\n\r\n');
    const reader = setInterval(() => socket.resume(), 10);
    try {
      await until(() => received >= body.length || dropped, 20_000, 'the whole answer');
    } finally {
      clearInterval(reader);
    }
    assert.equal(dropped, false, `dropped after ${received} bytes`);
    assert.deepEqual(reasons, []);
  });

  it('notices a client leaving a stream whose request body stalled past the request timeout', async () => {
    let closed = false;
    const { port } = await start({ requestTimeoutMs: 1000 }, (_req, res) => {
      res.writeHead(200, ['content-type', 'text/event-stream']);
      res.flushHeaders();
      res.on('close', () => (closed = true));
    });
    const socket = await open(port);
    socket.write('GET /events HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n0123456789');
    await new Promise((resolve) => setTimeout(resolve, 2500)); // the request timeout passes
    socket.write(Buffer.alloc(200 * 1024, ' '));
    socket.end();
    await until(() => closed, 5000, 'the stream to end once its client left');
  });
});
