/**
 * The last checks before a head reaches a wire: the response head written to a client
 * (core/http/wire/response.ts) and the request head written to a backend
 * (core/upstream/backend-connection.ts). A field that fails is named, wherever it stands in the
 * head, and nothing of the head is written.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Carrier, UpstreamError, UpstreamHandler } from '../../core/upstream/transport.ts';
import { Pool } from '../../core/upstream/pool.ts';
import type { WireRequest } from '../../core/http/wire/request.ts';
import type { WireResponse } from '../../core/http/wire/response.ts';
import { WireServer } from '../../core/http/wire/server.ts';
import { isWritableField, WritableFields } from '../../core/http/writable-fields.ts';

/** Values that must never reach a head: CR, LF, NUL, another control, DEL, a character past latin1 (U+010D would be a CR in latin1). */
const UNSAFE = ['a\r\nx-injected: 1', 'a\nb', 'a\rb', 'a\0b', 'a\x01b', 'a\x7fb', 'a\u010db', 'a\u2028b'];
const GOOD: readonly (readonly [string, string])[] = [['x-one', '1'], ['x-two', 'two words'], ['x-three', 'latin1 é\tand a tab'], ['x-four', 'last']];

class Outcome implements UpstreamHandler {
  readonly settled: Promise<{ status: number } | { error: UpstreamError }>;
  #resolve!: (value: { status: number } | { error: UpstreamError }) => void;
  constructor() {
    this.settled = new Promise((resolve) => (this.#resolve = resolve));
  }
  attach(_carrier: Carrier): void {}
  onHeaders(status: number): boolean {
    this.#resolve({ status });
    return true;
  }
  onData(): boolean {
    return true;
  }
  onComplete(): void {}
  onError(error: UpstreamError): void {
    this.#resolve({ error });
  }
}

describe('WritableFields: the memory of the last writable text per position is a shortcut, never a hole', () => {
  it('refuses every unsafe text at a position that last held a safe one of the same length, and keeps the safe one', () => {
    for (const bad of UNSAFE) {
      const fields = new WritableFields(4);
      const safe = 'x'.repeat(bad.length);
      assert.equal(fields.check(safe, 1), true);
      assert.equal(fields.check(bad, 1), false, JSON.stringify(bad));
      assert.equal(fields.check(bad, 1), false, 'refused again: a refusal is not remembered');
      assert.equal(fields.check(safe.slice(0, 1) + safe.slice(1), 1), true, 'the same text in another string passes');
      assert.equal(isWritableField(bad), false);
    }
  });

  it('remembers strings only: a value of another type that passed is checked again when it comes back changed', () => {
    const fields = new WritableFields(4);
    const value: string[] = ['safe'];
    assert.equal(fields.check(value as unknown as string, 0), true);
    value.push('\r\nx-injected: 1');
    assert.equal(fields.check(value as unknown as string, 0), false);
  });

  it('judges each position by its own memory, and positions past its size share slots without passing anything unsafe', () => {
    const fields = new WritableFields(2);
    assert.equal(fields.check('application/json', 0), true);
    assert.equal(fields.check('2025-06-18', 1), true);
    assert.equal(fields.check('application/json', 2), true, 'position 2 shares slot 0');
    assert.equal(fields.check('a\r\nb', 2), false);
    assert.equal(fields.check('a\r\nb', 3), false);
    assert.equal(fields.check('', 5), true, 'an empty value is writable');
    assert.equal(fields.check('latin1 é\tand a tab', 6), true);
    assert.equal(fields.check('a\u010db', 6), false);
  });
});

describe('the request head toward a backend: every value checked, the culprit named', () => {
  let server: Server;
  let received = '';
  let origin: URL;
  before(async () => {
    server = createServer((socket) => {
      socket.on('data', (d) => {
        received += d.toString('latin1');
        if (received.includes('\r\n\r\n')) socket.end('HTTP/1.1 204 No Content\r\n\r\n');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  });
  after(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  async function send(headers: string[]): Promise<{ status: number } | { error: UpstreamError }> {
    const pool = new Pool(origin, { connections: 1, keepAliveMs: 0, connectTimeoutMs: 2000 });
    try {
      const outcome = new Outcome();
      pool.dispatch(outcome, 'GET', '/', headers, null, 2000);
      return await outcome.settled;
    } finally {
      pool.close();
    }
  }

  it('sends a head whose values are all allowed, each as given', async () => {
    received = '';
    const result = await send(GOOD.flat());
    assert.deepEqual(result, { status: 204 });
    for (const [name, value] of GOOD) assert.ok(received.includes(`${name}: ${value}\r\n`), `${name} as given`);
  });

  for (const bad of UNSAFE) {
    for (const at of [0, 2, 4]) {
      it(`refuses ${JSON.stringify(bad)} as the value of header ${at / 2 + 1} of 4, naming it, and writes nothing`, async () => {
        received = '';
        const headers = GOOD.flat();
        headers[at + 1] = bad;
        const result = await send(headers);
        assert.ok('error' in result, 'the exchange fails');
        assert.equal(result.error.code, 'EUNSAFE_HEADER');
        assert.match(result.error.message, new RegExp(`refused to send header "${headers[at]}"`));
        assert.equal(received, '', 'no byte of the head reached the backend');
      });
    }
  }
});

describe('the response head toward a client: every name and value checked, the culprit named', () => {
  let server: WireServer;
  let port = 0;
  let respond: (res: WireResponse) => void = () => undefined;
  before(async () => {
    server = new WireServer((_req: WireRequest, res: WireResponse) => respond(res), { headersTimeoutMs: 1000, requestTimeoutMs: 2000, keepAliveTimeoutMs: 1000 });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** The error writing the head threw, if any, and what the client got (the server answers a handler's error itself). */
  async function answer(writeHead: (res: WireResponse) => void): Promise<{ thrown: unknown; status: number; injected: boolean; text: string }> {
    let thrown: unknown = null;
    respond = (res) => {
      try {
        writeHead(res);
        res.end('ok');
      } catch (err) {
        thrown = err;
        throw err;
      }
    };
    // A response whose own head keeps failing (a bad setHeader stays set for the server's 500)
    // ends with the connection closed: status 0 here.
    const response = await fetch(`http://127.0.0.1:${port}/`).catch(() => null);
    if (response === null) return { thrown, status: 0, injected: false, text: '' };
    return { thrown, status: response.status, injected: response.headers.has('x-injected'), text: await response.text() };
  }

  it('writes a head whose fields are all allowed (list and setHeader alike)', async () => {
    const { thrown, status, text } = await answer((res) => {
      res.setHeader('x-set', 'by setHeader');
      res.writeHead(200, GOOD.flat());
    });
    assert.equal(thrown, null);
    assert.deepEqual({ status, text }, { status: 200, text: 'ok' });
  });

  for (const bad of UNSAFE) {
    it(`refuses ${JSON.stringify(bad)} as a value in the list, naming its header`, async () => {
      const headers = GOOD.flat();
      headers[5] = bad; // x-three
      const { thrown, status, injected, text } = await answer((res) => res.writeHead(200, headers));
      assert.ok(thrown instanceof TypeError);
      assert.match(thrown.message, /invalid response header "x-three"/);
      assert.deepEqual({ status, injected }, { status: 500, injected: false }, 'the refused head was not written: a 500 went out instead');
      assert.notEqual(text, 'ok');
    });
    it(`refuses ${JSON.stringify(bad)} as a value given to setHeader, naming its header`, async () => {
      const { thrown, status, injected } = await answer((res) => {
        res.setHeader('x-set', bad);
        res.writeHead(200, GOOD.flat());
      });
      assert.ok(thrown instanceof TypeError);
      assert.match(thrown.message, /invalid response header "x-set"/);
      assert.ok(status === 500 || status === 0, `a 500 or the connection closed, not ${status}`);
      assert.equal(injected, false);
    });
  }

  it('refuses a name with a control character, naming it', async () => {
    const { thrown } = await answer((res) => res.writeHead(200, ['x-one', '1', 'x-bad\r\nname', '2']));
    assert.ok(thrown instanceof TypeError);
    assert.match(thrown.message, /invalid response header "x-bad\\r\\nname"/);
  });
});
