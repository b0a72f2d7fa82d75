/**
 * The last checks before a head reaches a wire: the response head written to a client
 * (core/http/wire/response.ts) and the request head written to a backend
 * (core/upstream/request-heads.ts). A field that fails is named, wherever it stands in the
 * head, and nothing of the head is written; a head that shares its first lines with the last one
 * written (head-memo.ts) comes out as if every line were joined afresh.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Carrier, UpstreamError, UpstreamHandler } from '../../core/upstream/transport.ts';
import { Pool } from '../../core/upstream/pool.ts';
import type { WireRequest } from '../../core/http/wire/request.ts';
import { WireResponse } from '../../core/http/wire/response.ts';
import { RequestHeads } from '../../core/upstream/request-heads.ts';
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

  it('judges every character from U+0000 to U+FFFF alike in short text (checked by a loop) and in long text (by the expression)', () => {
    const rule = /[^\t\x20-\x7e\x80-\xff]/;
    for (let code = 0; code <= 0xffff; code++) {
      const c = String.fromCharCode(code);
      const allowed = !rule.test(c);
      assert.equal(isWritableField(`a${c}b`), allowed, `U+${code.toString(16)} in short text`);
      assert.equal(isWritableField(`${'a'.repeat(60)}${c}b`), allowed, `U+${code.toString(16)} in long text`);
    }
    assert.equal(isWritableField('x'.repeat(48)), true);
    assert.equal(isWritableField('x'.repeat(47) + '\r'), false, 'the last character of the longest text the loop checks');
    assert.equal(isWritableField('x'.repeat(48) + '\n'), false, 'the first text the expression checks');
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

describe('the memory of the last head (head-memo.ts): lines taken whole only where they are the same, never a hole', () => {
  const NAMES = ['content-type', 'accept', 'mcp-session-id', 'x-request-id', 'authorization'];
  const VALUES = ['application/json', 'a', 'session-1', 'session-2', 'Bearer t1', '', 'a\r\nx-injected: 1', 'b\0c'];

  /** The head as it must come out: every line joined afresh, or null when a value may not be written. */
  function requestReference(method: string, path: string, headers: readonly string[], bodyLength: number): string | null {
    let head = `${method} ${path} HTTP/1.1\r\nhost: backend:8080\r\n`;
    for (let i = 0; i < headers.length; i += 2) {
      if (!isWritableField(headers[i + 1]!)) return null;
      head += `${headers[i]}: ${headers[i + 1]}\r\n`;
    }
    return head + (bodyLength < 0 ? '\r\n' : `content-length: ${bodyLength}\r\n\r\n`);
  }

  /** A small random generator (the sequence is the same every run). */
  function random(seed: number): () => number {
    let state = seed;
    return () => {
      state = (state * 1103515245 + 12345) & 0x7fffffff;
      return state / 0x80000000;
    };
  }

  it('writes, over 20,000 heads drawn from a few lines (so that most share a start with the last), exactly what joining every line afresh writes, and refuses every unsafe value', () => {
    const heads = new RequestHeads('backend:8080');
    const next = random(7);
    let last: string[] = [];
    let refused = 0;
    for (let n = 0; n < 20_000; n++) {
      // Mostly the last head with one line changed, dropped or added; sometimes a fresh one.
      const headers = next() < 0.2 ? [] : [...last];
      const change = Math.floor(next() * 4);
      const at = 2 * Math.floor(next() * (headers.length / 2 + 1));
      const line = [NAMES[Math.floor(next() * NAMES.length)]!, VALUES[Math.floor(next() * VALUES.length)]!];
      if (change === 0 && at < headers.length) headers.splice(at, 2);
      else if (change === 1) headers.splice(at, 0, ...line);
      else if (at < headers.length) headers[at + 1] = line[1]!;
      const method = next() < 0.9 ? 'POST' : 'GET';
      const bodyLength = method === 'GET' ? -1 : Math.floor(next() * 3) * 50;
      const expected = requestReference(method, '/mcp', headers, bodyLength);
      const text = heads.text(method, '/mcp', headers, bodyLength);
      assert.equal(text, expected, `head ${n}: ${JSON.stringify(headers)}`);
      if (text === null) refused++;
      last = headers.slice(0, 40);
    }
    assert.ok(refused > 100, `unsafe values came up (${refused} refused)`);
  });

  it('refuses an unsafe value in the line after the lines it shares with the last head, and in one of those lines, and writes the safe head again after', () => {
    const heads = new RequestHeads('backend:8080');
    const safe = ['content-type', 'application/json', 'mcp-session-id', 'session-1', 'x-request-id', '1'];
    const first = heads.text('POST', '/mcp', safe, 10);
    assert.equal(heads.text('POST', '/mcp', [...safe.slice(0, 5), '2'], 10), requestReference('POST', '/mcp', [...safe.slice(0, 5), '2'], 10));
    for (const bad of UNSAFE) {
      for (const at of [1, 3, 5]) {
        const headers = [...safe];
        headers[at] = bad;
        assert.equal(heads.text('POST', '/mcp', headers, 10), null, `${JSON.stringify(bad)} at ${at}`);
        assert.equal(heads.refusedName, headers[at - 1]);
      }
    }
    assert.equal(heads.text('POST', '/mcp', safe, 10), first);
  });

  /** A response head as WireResponse writes it, caught from its sink. */
  function responseHead(status: number, headers: (string | number)[], body: string): { head: string; keepAlive: boolean } {
    let data = '';
    const sink = { send: (_res: WireResponse, chunk: string | Buffer) => ((data += chunk.toString()), true), destroy: () => undefined, keepAliveSeconds: 5 };
    const res = new WireResponse(sink, 'GET', false, true);
    res.writeHead(status, headers).end(body);
    return { head: data.slice(0, data.indexOf('\r\n\r\n') + 4).replace(/^date: .*\r\n/m, ''), keepAlive: res.keepAlive };
  }

  it('keeps what the shared lines of a response head declared: a length, a date, a connection that closes', () => {
    const declaring = ['content-type', 'application/json', 'content-length', 2, 'Date', 'Thu, 01 Jan 2026 00:00:00 GMT', 'Connection', 'close'];
    for (let round = 0; round < 3; round++) {
      const { head, keepAlive } = responseHead(200, [...declaring, 'x-request-id', `r${round}`], 'ok');
      assert.equal(head, `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nDate: Thu, 01 Jan 2026 00:00:00 GMT\r\nConnection: close\r\nx-request-id: r${round}\r\n\r\n`, `round ${round}`);
      assert.equal(keepAlive, false, `round ${round}: the connection closes`);
    }
    for (let round = 0; round < 3; round++) {
      const { head, keepAlive } = responseHead(200, ['content-type', 'application/json', 'x-request-id', `r${round}`], 'ok');
      assert.equal(head, `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-request-id: r${round}\r\ncontent-length: 2\r\nconnection: keep-alive\r\nkeep-alive: timeout=5\r\n\r\n`, `round ${round}`);
      assert.equal(keepAlive, true);
    }
    const other = responseHead(404, ['content-type', 'application/json', 'x-request-id', 'r9'], 'no');
    assert.match(other.head, /^HTTP\/1\.1 404 Not Found\r\n/);
  });

  it('refuses an unsafe value or name in a response head that shares its first lines with the last, and writes the last again after', () => {
    const safe = ['content-type', 'application/json', 'mcp-session-id', 'session-1', 'x-request-id', 'r1'];
    const first = responseHead(200, safe, 'ok').head;
    for (const bad of UNSAFE) {
      for (const at of [1, 3, 4, 5]) {
        const headers = [...safe];
        headers[at] = bad;
        assert.throws(() => responseHead(200, headers, 'ok'), /invalid response header/, `${JSON.stringify(bad)} at ${at}`);
      }
    }
    assert.equal(responseHead(200, safe, 'ok').head, first);
  });
});

describe('the memory of the last head holds text only: a value that is not a string is built and checked afresh every time', () => {
  it('refuses a request head whose array value (a hook\'s credential) was changed in place to carry CR LF, and never writes the changed text', () => {
    const heads = new RequestHeads('backend:8080');
    const credential = ['Bearer good'];
    const headers = () => ['accept', 'application/json', 'authorization', credential as unknown as string, 'x-request-id', `r${Math.random()}`];
    assert.match(heads.text('POST', '/mcp', headers(), 2)!, /authorization: Bearer good\r\n/);
    assert.match(heads.text('POST', '/mcp', headers(), 2)!, /authorization: Bearer good\r\n/);
    credential[0] = 'Bearer user-b';
    assert.match(heads.text('POST', '/mcp', headers(), 2)!, /authorization: Bearer user-b\r\n/, 'the value as it is now, not as it was');
    credential[0] = 'Bearer x\r\nx-injected: 1';
    assert.equal(heads.text('POST', '/mcp', headers(), 2), null);
    assert.equal(heads.refusedName, 'authorization');
  });

  it('refuses a response head whose object value turns unsafe, and writes its text as it is now', () => {
    let text = 'safe';
    const value = { toString: () => text };
    const headers = () => ['content-type', 'application/json', 'x-thing', value as unknown as string, 'x-request-id', `r${Math.random()}`];
    assert.match(responseHeadOf(200, headers()), /x-thing: safe\r\n/);
    assert.match(responseHeadOf(200, headers()), /x-thing: safe\r\n/);
    text = 'other';
    assert.match(responseHeadOf(200, headers()), /x-thing: other\r\n/);
    text = 'a\r\nx-injected: 1';
    assert.throws(() => responseHeadOf(200, headers()), /invalid response header "x-thing"/);
  });

  it('keeps nothing of a head whose value\'s toString wrote another head meanwhile: the next heads are each as if joined afresh', () => {
    const inner = ['content-type', 'text/plain', 'x-inner', 'i', 'x-request-id', 'r-inner'];
    const reentrant = { toString: () => (responseHeadOf(201, inner), 'outer') };
    const outer = ['content-type', 'application/json', 'x-outer', reentrant as unknown as string, 'x-request-id', 'r-outer'];
    responseHeadOf(200, ['content-type', 'application/json', 'x-outer', 'plain', 'x-request-id', 'r0']);
    assert.equal(responseHeadOf(200, outer), 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-outer: outer\r\nx-request-id: r-outer\r\ncontent-length: 2\r\nconnection: keep-alive\r\nkeep-alive: timeout=5\r\n\r\n');
    assert.equal(responseHeadOf(201, inner), 'HTTP/1.1 201 Created\r\ncontent-type: text/plain\r\nx-inner: i\r\nx-request-id: r-inner\r\ncontent-length: 2\r\nconnection: keep-alive\r\nkeep-alive: timeout=5\r\n\r\n');
    assert.equal(responseHeadOf(200, ['content-type', 'application/json', 'x-outer', 'plain', 'x-request-id', 'r1']), 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-outer: plain\r\nx-request-id: r1\r\ncontent-length: 2\r\nconnection: keep-alive\r\nkeep-alive: timeout=5\r\n\r\n');
  });

  it('closes the connection of a response whose head said close before a line it refused, as when every line was read afresh', () => {
    const closing = ['connection', 'close', 'x-request-id', 'r1'];
    responseHeadOf(200, closing);
    const sink = { send: () => true, destroy: () => undefined, keepAliveSeconds: 5 };
    const res = new WireResponse(sink, 'GET', false, true);
    res.writeHead(200, ['connection', 'close', 'x-bad', 'a\r\nb']);
    assert.throws(() => res.end('ok'), /invalid response header "x-bad"/);
    assert.equal(res.keepAlive, false);
  });

  /** The head WireResponse writes for `headers` and a 2-byte body, its date line taken out. */
  function responseHeadOf(status: number, headers: string[]): string {
    let data = '';
    const sink = { send: (_res: WireResponse, chunk: string | Buffer) => ((data += chunk.toString()), true), destroy: () => undefined, keepAliveSeconds: 5 };
    new WireResponse(sink, 'GET', false, true).writeHead(status, headers).end('ok');
    return data.slice(0, data.indexOf('\r\n\r\n') + 4).replace(/^date: .*\r\n/m, '');
  }
});
