/**
 * `server.engine: node`: the two limits node:http does not have, added to its response
 * (core/server/limited-response.ts), over raw sockets: a client that stops reading is dropped, at once
 * when a writer that ignores backpressure piles up more than `maxStreamBuffer`, after
 * `sendTimeoutMs` when what waits does not move, while a slow client that keeps reading, even
 * one large write a little at a time, is not.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { afterEach, describe, it } from 'node:test';
import type { ConnectionLimits } from '../../core/config/server-settings.ts';
import type { GatewayMetrics } from '../../core/observe/metrics.ts';
import { createListener, type Listener } from '../../core/server/listeners.ts';
import { closeAll, rawClient, until } from './helpers/raw-clients.ts';

type Handler = (path: string, res: ServerResponse) => void;

let listener: Listener | null = null;

async function start(limits: Partial<ConnectionLimits>, handler: Handler): Promise<{ port: number; dropped: string[] }> {
  const dropped: string[] = [];
  const metrics = { limited: (reason: string) => dropped.push(reason) } as unknown as GatewayMetrics;
  const all: ConnectionLimits = { maxConnections: 100, maxPipelinedRequests: 16, maxSessionRequests: 64, maxStreamBuffer: 0, sendTimeoutMs: 0, ...limits };
  listener = createListener((req, res) => handler(req.url ?? '', res as unknown as ServerResponse), { engine: 'node', limits: all }, metrics);
  await new Promise<void>((resolve) => listener!.listen(0, '127.0.0.1', resolve));
  return { port: (listener.address() as { port: number }).port, dropped };
}

async function open(port: number, path: string): Promise<Socket> {
  const socket = await rawClient(port);
  socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
  return socket;
}

afterEach(async () => {
  const l = listener;
  listener = null;
  await closeAll(l);
});

describe('engine: node holds maxStreamBuffer and sendTimeout', () => {
  it('drops a client that stops reading while a writer ignoring backpressure piles up more than maxStreamBuffer', async () => {
    let closed = false;
    let written = 0;
    const { port, dropped } = await start({ maxStreamBuffer: 256 * 1024 }, (_path, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
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
    const socket = await open(port, '/events');
    socket.pause(); // reads nothing more
    await until(() => closed, 10_000, 'the stream to be dropped');
    assert.deepEqual(dropped, ['stream_buffer']);
    assert.ok(written < 64 * 1024 * 1024, `${written} bytes were written before the drop`);
  });

  it('drops a client that takes nothing for sendTimeoutMs, and keeps one that reads slowly', async () => {
    const closed = new Set<string>();
    const { port, dropped } = await start({ sendTimeoutMs: 1500 }, (path, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const event = Buffer.alloc(64 * 1024, 'y');
      // A well-behaved writer: waits for 'drain', so nothing piles up; only the clock can tell.
      const pump = (): void => {
        while (!res.writableEnded && !res.destroyed) if (!res.write(event)) return void res.once('drain', pump);
      };
      pump();
      res.on('close', () => closed.add(path));
    });
    const stalled = await open(port, '/stalled');
    stalled.pause();
    const slow = await open(port, '/slow');
    slow.pause();
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

  it('drops a stalled client of a stream whose events are not ASCII (progress counted in bytes on both sides)', async () => {
    let closed = false;
    const { port, dropped } = await start({ sendTimeoutMs: 1000 }, (_path, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // Enough at once to fill the socket's buffers, then an event now and then, as notifications come.
      res.write(`data: ${'é'.repeat(4 * 1024 * 1024)}\n\n`);
      const timer = setInterval(() => res.write(`data: ${'é'.repeat(64)}\n\n`), 300);
      res.on('close', () => {
        closed = true;
        clearInterval(timer);
      });
    });
    const socket = await open(port, '/events');
    socket.pause();
    await until(() => closed, 8000, 'the stalled client to be dropped');
    assert.deepEqual(dropped, ['send_timeout']);
  });

  for (const how of ['end(body)', 'write(body), end()'] as const) {
    it(`drops a client that takes nothing of an answer sent with ${how}`, async () => {
      let closed = false;
      const body = Buffer.alloc(16 * 1024 * 1024, 'q');
      const { port, dropped } = await start({ sendTimeoutMs: 1000, maxStreamBuffer: 64 * 1024 * 1024 }, (_path, res) => {
        res.on('close', () => (closed = true));
        res.writeHead(200, { 'content-length': String(body.length) });
        if (how === 'end(body)') res.end(body);
        else {
          res.write(body);
          res.end();
        }
      });
      const socket = await open(port, '/big');
      socket.pause();
      await until(() => closed, 8000, 'the stalled client to be dropped');
      assert.deepEqual(dropped, ['send_timeout']);
    });
  }

  it('keeps a slow reader of one large write: the bytes libuv has yet to write count as progress', async () => {
    let dropped = false;
    const body = Buffer.alloc(24 * 1024 * 1024, 'z');
    const { port, dropped: reasons } = await start({ sendTimeoutMs: 1500, maxStreamBuffer: 64 * 1024 * 1024 }, (_path, res) => {
      res.on('close', () => (dropped = !res.writableFinished));
      res.writeHead(200, { 'content-length': String(body.length) });
      if (!res.write(body)) res.once('drain', () => res.end());
      else res.end();
    });
    const socket = await open(port, '/big');
    let received = 0;
    socket.on('data', (d: Buffer) => {
      received += d.length;
      socket.pause();
    });
    const reader = setInterval(() => socket.resume(), 10);
    try {
      await until(() => received >= body.length || dropped, 20_000, 'the whole answer');
    } finally {
      clearInterval(reader);
    }
    assert.equal(dropped, false, `dropped after ${received} bytes`);
    assert.deepEqual(reasons, []);
  });
});
