/**
 * The upstream pool's keep-alive reuse when an exchange paused reading (backpressure, or an
 * async response hook) as its response completed: the next exchange on that connection must be
 * read from the start, not wait forever on a paused socket.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
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
