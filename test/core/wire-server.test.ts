/**
 * Gatehouse's own HTTP/1.1 server (core/http/wire/) over raw sockets: framing both ways,
 * keep-alive and pipelining order, the refusals (malformed, smuggling shapes, oversize heads,
 * slow heads), HTTP/1.0, HEAD, backpressure, a client leaving mid-response, and how a
 * connection reads and writes its socket (core/http/handle-reading.ts, handle-writing.ts).
 */
import assert from 'node:assert/strict';
import { connect, createServer, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { WireRequest } from '../../core/http/wire/request.ts';
import type { WireResponse } from '../../core/http/wire/response.ts';
import { WireServer } from '../../core/http/wire/server.ts';
import { Connection, type ConnectionOwner } from '../../core/http/wire/client-connection.ts';
import { createRequestParser, kOnMessageComplete } from '../../core/http/parser.ts';
import { startReading, type BodySink } from '../../core/http/body.ts';
import type { GatewayError } from '../../core/base/errors.ts';
import type { RequestRecord } from '../../core/observe/request-record.ts';
import { runInRequest, scopeRequests } from '../../core/observe/request-scope.ts';

type Handler = (req: WireRequest, res: WireResponse) => void;

let handler: Handler = () => undefined;
let server: WireServer;
let port = 0;

function readBody(req: WireRequest): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString()));
  });
}

/**
 * What Node's strict parser (llhttp, fed everything at once) makes of `bytes`: an error, at least
 * one whole request, or a request still waiting for bytes.
 */
function referenceVerdict(bytes: Buffer): 'error' | 'complete' | 'waiting' {
  const parser = createRequestParser(16 * 1024);
  let complete = false;
  parser[kOnMessageComplete] = () => {
    complete = true;
  };
  const result = parser.execute(bytes);
  parser.close();
  if (typeof result !== 'number') return 'error';
  return complete ? 'complete' : 'waiting';
}

/** Sends raw bytes; resolves with everything the server sent until it closed or `until` matched. */
function exchange(bytes: string | Buffer | (string | Buffer)[], until?: RegExp, timeoutMs = 3000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(received);
    }, timeoutMs);
    socket.on('connect', () => {
      for (const part of Array.isArray(bytes) ? bytes : [bytes]) socket.write(part);
    });
    socket.on('data', (d) => {
      received += d.toString('latin1');
      if (until?.test(received)) {
        clearTimeout(timer);
        socket.destroy();
        resolve(received);
      }
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
    socket.on('error', reject);
  });
}

describe('wire server', () => {
  before(async () => {
    server = new WireServer((req, res) => handler(req, res), { headersTimeoutMs: 300, requestTimeoutMs: 800, keepAliveTimeoutMs: 1500 });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('keeps a connection alive across requests, with Content-Length, Date and keep-alive headers', async () => {
    handler = (req, res) => {
      res.writeHead(200, ['content-type', 'text/plain']);
      res.end(`you asked ${req.method} ${req.url}`);
    };
    const out = await exchange('GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b?q=1 HTTP/1.1\r\nHost: x\r\n\r\n', /you asked GET \/b\?q=1/);
    assert.equal((out.match(/HTTP\/1\.1 200 OK/g) ?? []).length, 2);
    assert.match(out, /content-length: 16\r\n/); // 'you asked GET /a'
    assert.match(out, /date: \w{3}, \d{2} \w{3} \d{4}/);
    assert.match(out, /connection: keep-alive\r\nkeep-alive: timeout=1\r\n/);
    assert.ok(out.indexOf('you asked GET /a') < out.indexOf('you asked GET /b'));
  });

  it('answers pipelined requests in order, even when a later one finishes first', async () => {
    handler = (req, res) => {
      const delay = req.url === '/slow' ? 80 : 0;
      setTimeout(() => res.end(req.url), delay);
    };
    const out = await exchange('GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\nGET /last HTTP/1.1\r\nHost: x\r\n\r\n', /\/last$/);
    const order = [...out.matchAll(/\r\n\r\n(\/(?:slow|fast|last))/g)].map((m) => m[1]);
    assert.deepEqual(order, ['/slow', '/fast', '/last']);
  });

  it('stops reading a connection that pipelines more than maxPipelinedRequests (default 16) unanswered requests', async () => {
    const waiting: WireResponse[] = [];
    handler = (req, res) => {
      res.setHeader('x-url', req.url);
      waiting.push(res);
    };
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d) => (received += d.toString('latin1')));
    await new Promise((resolve) => socket.once('connect', resolve));
    for (let i = 0; i < 40; i++) {
      socket.write(`GET /p${i} HTTP/1.1\r\nHost: x\r\n\r\n`);
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    const dispatched = waiting.length;
    assert.ok(dispatched >= 16 && dispatched < 40, `${dispatched} requests reached the handler before any was answered`);
    // Answer as they come: the rest are read and answered, in order.
    while (waiting.length < 40 || waiting.some((r) => !r.writableEnded)) {
      for (const r of waiting) if (!r.writableEnded) r.end('ok');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.destroy();
    const order = [...received.matchAll(/x-url: \/p(\d+)/g)].map((m) => Number(m[1]));
    assert.deepEqual(order, Array.from({ length: 40 }, (_, i) => i));
  });

  it('sees a client leave while its connection is paused at maxPipelinedRequests: its responses are told', async () => {
    let handled = 0;
    let closed = 0;
    handler = (_req, res) => {
      handled++;
      res.on('close', () => closed++); // a backend call would be cancelled here
    };
    for (const leave of ['end', 'reset'] as const) {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(Array.from({ length: 16 }, (_, i) => `POST /call${i} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}`).join(''));
      await new Promise((resolve) => setTimeout(resolve, 50));
      if (leave === 'end') socket.end();
      else socket.resetAndDestroy();
    }
    const until = Date.now() + 2000;
    while (closed < 32 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(handled, 32);
    assert.equal(closed, 32);
  });

  it('answers a malformed request behind an unanswered GET with a 400 that has its body (it answers the GET)', async () => {
    handler = (_req, res) => void setTimeout(() => res.end('late'), 300);
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d) => (received += d.toString('latin1')));
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.write('HEAD / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n');
    await new Promise((resolve) => socket.once('close', resolve));
    const [head, body] = received.split('\r\n\r\n');
    assert.match(head!, /^HTTP\/1\.1 400 Bad Request/);
    assert.equal(body!.length, Number(/content-length: (\d+)/.exec(head!)![1]));
  });

  it('builds req.headers without a prototype: __proto__ and constructor are plain headers; repeats joined', async () => {
    handler = (req, res) => {
      const h = req.headers;
      res.end(JSON.stringify({ proto: h['__proto__'], ctor: h['constructor'], accept: h['accept'], host: h['host'], toString: h['tostring'] ?? null }));
    };
    const out = await exchange('GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n__proto__: x\r\nConstructor: y\r\nAccept: 1\r\nAccept: 2\r\n\r\n', /\}$/);
    assert.deepEqual(JSON.parse(out.slice(out.indexOf('\r\n\r\n') + 4)), { proto: 'x', ctor: 'y', accept: '1, 2', host: 'a', toString: null });
  });

  it('reads a chunked request body, and a body the handler reads late (after an async step)', async () => {
    handler = (req, res) => {
      setTimeout(() => void readBody(req).then((body) => res.end(`got ${body.length}: ${body}`)), 30);
    };
    const out = await exchange('POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n', /got 11/);
    assert.match(out, /got 11: hello world/);
  });

  it('streams a response without a length as chunks, and ends it', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      res.write('data: one\n\n');
      setTimeout(() => res.end('data: two\n\n'), 20);
    };
    const out = await exchange('GET /sse HTTP/1.1\r\nHost: x\r\n\r\n', /0\r\n\r\n$/);
    assert.match(out, /transfer-encoding: chunked/);
    assert.match(out, /b\r\ndata: one\n\n\r\nb\r\ndata: two\n\n\r\n0\r\n\r\n$/);
  });

  it('sends 100 Continue to a client that expects it', async () => {
    handler = (req, res) => void readBody(req).then((body) => res.end(body));
    const out = await exchange(['POST /up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n', 'data'], /data$/);
    assert.match(out, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK/);
  });

  it('refuses malformed and smuggling-shaped requests with 400 and closes', async () => {
    // The handler reads the body first, as the gateway does: a body that breaks the framing
    // half-way is still answered with the 400, and the handler never gets to answer.
    handler = (req, res) => void readBody(req).then(() => res.end('must not be reached'));
    for (const bad of [
      'NOT HTTP\r\n\r\n',
      'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab',
      'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
    ]) {
      const out = await exchange(bad);
      assert.match(out, /^HTTP\/1\.1 400 Bad Request/, JSON.stringify(bad));
      assert.match(out, /malformed HTTP request \(HPE_/);
      assert.doesNotMatch(out, /must not be reached/);
    }
  });

  it('refuses a head over 16 KiB with 431, and HTTP/1.1 without Host with 400', async () => {
    handler = (_req, res) => res.end('ok');
    const big = await exchange(`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assert.match(big, /^HTTP\/1\.1 431 Request Header Fields Too Large/);
    const hostless = await exchange('GET / HTTP/1.1\r\n\r\n');
    assert.match(hostless, /^HTTP\/1\.1 400 Bad Request[\s\S]*needs a Host header/);
  });

  it('answers 408 to a head that does not arrive in time (slow loris), and closes', async () => {
    handler = (_req, res) => res.end('ok');
    const started = Date.now();
    const out = await exchange('GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ', undefined, 5000);
    assert.match(out, /^HTTP\/1\.1 408 Request Timeout/);
    assert.ok(Date.now() - started < 10_000);
  });

  it('closes an idle keep-alive connection after its timeout', async () => {
    handler = (_req, res) => res.end('ok');
    const started = Date.now();
    const out = await exchange('GET / HTTP/1.1\r\nHost: x\r\n\r\n', undefined, 6000);
    assert.match(out, /\r\n\r\nok$/);
    const waited = Date.now() - started;
    // Never before its timeout (1.5 s, less the timer's granularity); the upper bound only catches "never".
    assert.ok(waited >= 1400 && waited < 15_000, `closed after ${waited} ms`);
  });

  it('serves HTTP/1.0 with a length or by closing, and HEAD without a body', async () => {
    handler = (req, res) => {
      if (req.url === '/stream') {
        res.write('part1');
        res.end('part2');
      } else res.end('body');
    };
    const ten = await exchange('GET /stream HTTP/1.0\r\n\r\n');
    assert.match(ten, /connection: close/);
    assert.doesNotMatch(ten, /chunked/);
    assert.match(ten, /part1part2$/);
    const head = await exchange('HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.match(head, /content-length: 4\r\n/); // the length a GET would have had
    assert.doesNotMatch(head, /body/);
    assert.match(head, /\r\n\r\n$/);
  });

  it('applies backpressure to a slow reader and delivers every byte', async () => {
    const total = 8 * 1024 * 1024;
    handler = (_req, res) => {
      res.writeHead(200, ['content-length', String(total)]);
      const chunk = Buffer.alloc(256 * 1024, 'x');
      let sent = 0;
      let drains = 0;
      const pump = (): void => {
        while (sent < total) {
          sent += chunk.length;
          if (sent >= total) {
            res.end(chunk);
            assert.ok(drains > 0, 'the writer had to wait for drain');
            return;
          }
          if (!res.write(chunk)) {
            res.once('drain', () => {
              drains++;
              pump();
            });
            return;
          }
        }
      };
      pump();
    };
    const received = await new Promise<number>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => socket.write('GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
      let bytes = 0;
      socket.pause();
      setTimeout(() => socket.resume(), 200); // a slow reader
      socket.on('data', (d) => (bytes += d.length));
      socket.on('close', () => resolve(bytes));
    });
    assert.ok(received > total, `received ${received} bytes`);
  });

  it('tells the handler when the client leaves mid-response (close without finish)', async () => {
    let seen: { finished: boolean; requestClosed: boolean } | null = null;
    const done = new Promise<void>((resolve) => {
      handler = (req, res) => {
        let requestClosed = false;
        req.on('close', () => (requestClosed = true));
        res.writeHead(200, {});
        res.flushHeaders();
        res.on('close', () => {
          setImmediate(() => {
            seen = { finished: res.writableFinished, requestClosed };
            resolve();
          });
        });
      };
    });
    await exchange('GET /wait HTTP/1.1\r\nHost: x\r\n\r\n', /\r\n\r\n/);
    await done;
    assert.deepEqual(seen, { finished: false, requestClosed: true });
  });

  it('survives 400 mutated requests (seeded): each is answered with a clear status, or awaits its missing bytes', async () => {
    handler = (req, res) => void readBody(req).then((body) => res.end(`ok ${body.length}`));
    let seed = 0x9e3779b9;
    const random = (n: number): number => {
      seed = (seed * 1664525 + 1013904223) >>> 0;
      return seed % n;
    };
    const base = Buffer.from('POST /mcp?x=1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n');
    const noise = [0x00, 0x0a, 0x0d, 0x20, 0x3a, 0x7f, 0xff, 0x30, 0x66];
    const statuses = new Map<string, number>();
    for (let round = 0; round < 400; round++) {
      const bytes = [...base];
      for (let edits = 1 + random(4); edits > 0; edits--) {
        const at = random(bytes.length);
        switch (random(4)) {
          case 0:
            bytes[at] = noise[random(noise.length)]!;
            break;
          case 1:
            bytes.splice(at, 0, noise[random(noise.length)]!);
            break;
          case 2:
            bytes.splice(at, 1 + random(8));
            break;
          default:
            bytes.splice(at, 0, ...Buffer.from('ffffffffffffffff'));
        }
      }
      const mutated = Buffer.from(bytes);
      const verdict = referenceVerdict(mutated);
      const out = await exchange(mutated, /\r\n\r\n(ok \d+|\{.*\})$/, 200);
      const status = out === '' ? 'unanswered' : (/^HTTP\/1\.1 (\d{3}) /.exec(out)?.[1] ?? `malformed: ${JSON.stringify(out.slice(0, 40))}`);
      // Only bytes a strict parser is still waiting on may go unanswered; refused or whole ones never.
      if (status === 'unanswered') assert.equal(verdict, 'waiting', `unanswered although a strict parser says ${verdict}: ${JSON.stringify(mutated.toString('latin1'))}`);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
    for (const status of statuses.keys()) assert.match(status, /^(200|400|408|431|unanswered)$/, [...statuses].join());
    assert.ok((statuses.get('400') ?? 0) > 100, [...statuses].join()); // most mutations are refused, clearly
    // And the server is still there.
    const after = await exchange('POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi');
    assert.match(after, /^HTTP\/1\.1 200 OK[\s\S]*ok 2$/);
  });

  it('refuses a response header that would inject headers, or whose characters past latin1 would encode to CR LF (500)', async () => {
    for (const value of ['a\r\nset-cookie: pwned=1', 'a\u010d\u010aset-cookie: pwned=1', 'a\u0000b']) {
      handler = (_req, res) => {
        res.writeHead(200, { 'x-evil': value });
        res.end('x');
      };
      const injected = await exchange('GET / HTTP/1.1\r\nHost: x\r\n\r\n', /\r\n\r\n.*$/);
      assert.match(injected, /^HTTP\/1\.1 500 Internal Server Error/);
      assert.doesNotMatch(injected, /pwned/);
    }
  });

  it('writes header values as latin1 bytes whether or not a body follows (as node:http does)', async () => {
    for (const respond of [
      (res: WireResponse) => res.writeHead(204, { 'x-name': 'caf\u00e9' }).end(),
      (res: WireResponse) => res.writeHead(200, { 'x-name': 'caf\u00e9' }).end('body'),
      (res: WireResponse) => {
        res.writeHead(200, { 'x-name': 'caf\u00e9', 'content-type': 'text/event-stream' });
        res.flushHeaders();
        setTimeout(() => res.end(), 20);
      },
    ]) {
      handler = (_req, res) => respond(res);
      const out = await exchange('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      // exchange() reads latin1: one byte 0xE9 reads back as é; its UTF-8 encoding would read as Ã©.
      assert.match(out, /x-name: caf\u00e9\r\n/);
      assert.doesNotMatch(out, /\u00c3/);
    }
  });

  it('ignores Upgrade (RFC 9110 §7.8): a websocket GET and an h2c POST are served as HTTP/1.1, and are the connection\'s last', async () => {
    const seen: string[] = [];
    handler = (req, res) => void readBody(req).then((body) => (seen.push(`${req.method} ${req.url}`), res.end(`${req.method} ${req.url} ${body}`)));
    const websocket = await exchange('GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.match(websocket, /^HTTP\/1\.1 200 OK[\s\S]*connection: close[\s\S]*GET \/ws $/);
    const h2c = await exchange(
      'POST /mcp HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\nContent-Length: 5\r\n\r\nhello' +
        'POST /next HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi',
    );
    assert.match(h2c, /^HTTP\/1\.1 200 OK[\s\S]*POST \/mcp hello$/);
    assert.doesNotMatch(h2c, /101 Switching/);
    assert.deepEqual(seen, ['GET /ws', 'POST /mcp'], 'nothing after an Upgrade request is read as a request');
  });

  it('reads nothing after an Upgrade request whose body ends in a later read (no request smuggled in its tail)', async () => {
    const seen: string[] = [];
    handler = (req, res) => void readBody(req).then((body) => (seen.push(`${req.method} ${req.url} ${body}`), res.end('ok')));
    const smuggled = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
    // Three reads: the head and half the body; the rest of the body and another head; its body.
    const socket = connect(port, '127.0.0.1');
    let out = '';
    socket.on('data', (d: Buffer) => (out += d.toString('latin1')));
    const closed = new Promise((resolve) => socket.on('close', resolve));
    const pause = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 50));
    socket.write('POST /mcp HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nContent-Length: 10\r\n\r\nhello');
    await pause();
    socket.write(`world POST /nothing HTTP/1.1\r\nHost: x\r\nContent-Length: ${smuggled.length}\r\n\r\n`);
    await pause();
    if (!socket.destroyed) socket.write(smuggled);
    await Promise.race([closed, pause().then(pause).then(pause)]);
    socket.destroy();
    assert.equal(out.match(/HTTP\/1\.1 /g)?.length, 1, out);
    assert.deepEqual(seen, ['POST /mcp helloworld']);
  });

  it('refuses CONNECT (501) and reads nothing after it', async () => {
    const seen: string[] = [];
    handler = (req, res) => (seen.push(`${req.method} ${req.url}`), res.end('ok'));
    const out = await exchange('CONNECT /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 28\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.match(out, /^HTTP\/1\.1 501 Not Implemented[\s\S]*CONNECT is not supported/);
    assert.match(out, /"error":"not_implemented"/);
    assert.equal(out.match(/HTTP\/1\.1 /g)?.length, 1);
    assert.deepEqual(seen, []);
  });

  it('answers 408 to a request whose body stalls past the request timeout, and closes', async () => {
    let failure: string | null = null;
    handler = (req, res) => {
      req.on('error', (err: Error) => (failure = err.message));
      req.on('data', () => undefined);
    };
    const started = Date.now();
    const out = await exchange('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n{"partial":', undefined, 5000);
    assert.match(out, /^HTTP\/1\.1 408 Request Timeout[\s\S]*connection: close[\s\S]*request_timeout/);
    assert.ok(Date.now() - started < 10_000, 'within the request timeout and a sweep');
    assert.match(failure ?? '', /not received within/, 'the body reader was told');
  });

  it('bounds what a pipelined response holds behind a response that never ends: its writer is paused, then drained in order', async () => {
    const blocker: { res: WireResponse | null } = { res: null };
    let drained = 0;
    let refused = 0;
    handler = (req, res) => {
      if (req.url === '/stream') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.flushHeaders();
        blocker.res = res;
        return;
      }
      // A writer that honours backpressure, as the gateway's exchanges do.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(32 * 1024, 'x');
      let sent = 0;
      const pump = (): void => {
        while (sent < 8) {
          sent++;
          if (!res.write(chunk)) {
            refused++;
            res.once('drain', () => {
              drained++;
              pump();
            });
            return;
          }
        }
        res.end();
      };
      pump();
    };
    const socket = connect(port, '127.0.0.1');
    let received = 0;
    socket.on('data', (d: Buffer) => (received += d.length));
    socket.write('GET /stream HTTP/1.1\r\nHost: x\r\n\r\nGET /big HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.ok(refused > 0, 'writes past the soft limit report backpressure');
    assert.ok(received < 32 * 1024, 'nothing of the held response is sent while the stream is open');
    blocker.res!.end();
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.ok(received > 8 * 32 * 1024, 'the held response follows once the stream ends');
    assert.ok(drained > 0, 'and its writer is told to go on');
    socket.destroy();
  });

  describe('the gateway\'s body reader (body.ts startReading: the request hands it the body, no events)', () => {
    /** What a sink was told, in order: `body <text>` or `failed <code>: <description>`. */
    function recordingSink(told: string[], then: (res: WireResponse) => void): BodySink<WireResponse> {
      return {
        body: (res, body) => {
          told.push(`body ${body.toString()}`);
          then(res);
        },
        bodyFailed: (res, error: GatewayError) => {
          told.push(`failed ${error.code}: ${error.message}`);
          then(res);
        },
      };
    }
    /** `promise`, or a failure naming `what` after 3 s (a reader never told would hang the test). */
    const within = <T>(promise: Promise<T>, what: string): Promise<T> =>
      Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within 3 s`)), 3000).unref())]);
    const answer = (told: string[]) => (res: WireResponse) => {
      if (!res.writableEnded) res.end(told.join('|'));
    };

    it('reads a chunked body whole, read at once or after an async step (its chunks kept meanwhile)', async () => {
      for (const delayMs of [0, 30]) {
        const told: string[] = [];
        const listeners: number[] = [];
        handler = (req, res) => {
          const read = () => {
            startReading(req, 1024, recordingSink(told, answer(told)), res);
            listeners.push(req.listenerCount('data') + req.listenerCount('end') + req.listenerCount('error') + req.listenerCount('close'));
          };
          if (delayMs === 0) read();
          else setTimeout(read, delayMs);
        };
        const out = await exchange('POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n', /\r\n\r\n.+/);
        assert.match(out, /\r\n\r\nbody hello world$/, `read after ${delayMs} ms`);
        assert.deepEqual(told, ['body hello world']);
        assert.deepEqual(listeners, [0], 'no listener is added to the request');
      }
    });

    it('refuses a body past the limit once (413), in a later chunk, and delivers nothing after', async () => {
      const told: string[] = [];
      handler = (req, res) => startReading(req, 8, recordingSink(told, answer(told)), res);
      const chunks = ['POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n', '6\r\n world\r\n', '3\r\nabc\r\n0\r\n\r\n'];
      const out = await exchange(chunks, /\r\n\r\n.+/);
      assert.match(out, /failed payload_too_large: request body exceeds the limit of 8 bytes$/);
      assert.deepEqual(told, ['failed payload_too_large: request body exceeds the limit of 8 bytes']);
    });

    it('reads a body of many small chunks whole and in order (copied into blocks), with large ones among them', async () => {
      const told: string[] = [];
      handler = (req, res) => startReading(req, 1_000_000, recordingSink(told, (r) => r.end(String(told.length))), res);
      const pieces: string[] = [];
      for (let i = 0; i < 3000; i++) pieces.push(String.fromCharCode(97 + (i % 26)));
      pieces.splice(1500, 0, 'L'.repeat(2048));
      pieces.push('T'.repeat(5000));
      const chunked = pieces.map((p) => `${p.length.toString(16)}\r\n${p}\r\n`).join('') + '0\r\n\r\n';
      await exchange('POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n' + chunked, /\r\n\r\n1$/);
      assert.equal(told.length, 1);
      assert.equal(told[0], `body ${pieces.join('')}`);
    });

    it('tells the sink once when it throws refusing a body past the limit; the connection ends, the process does not', async () => {
      let calls = 0;
      handler = (req, res) =>
        startReading(
          req,
          4,
          {
            body: () => res.end('no'),
            bodyFailed: () => {
              calls++;
              throw new Error('a sink that throws');
            },
          },
          res,
        );
      const out = await exchange('POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n', undefined, 500);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(calls, 1);
      assert.equal(out, '', 'the connection is dropped without an answer');
    });

    it('tells a reader that attaches after the client left mid-body (during an async step) that the body will not come', async () => {
      const told: string[] = [];
      let settle!: () => void;
      const settled = new Promise<void>((resolve) => (settle = resolve));
      handler = (req, res) => {
        setTimeout(() => startReading(req, 1_000_000, recordingSink(told, () => settle()), res), 100);
      };
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"partial":');
      await new Promise((resolve) => setTimeout(resolve, 30));
      socket.destroy();
      await within(settled, 'the late reader told');
      assert.deepEqual(told, ['failed invalid_request: the client closed the request before its body was complete']);
    });

    it('hands the body over once when request scoping ends while it arrives (no scope to re-enter)', async () => {
      const told: string[] = [];
      const record = { id: 'a request' } as unknown as RequestRecord;
      handler = (req, res) => {
        const unscope = scopeRequests();
        runInRequest(record, () => startReading(req, 1_000, recordingSink(told, answer(told)), res));
        // The rest of the body comes in a later read, once nobody scopes requests any more.
        unscope();
      };
      const socket = connect(port, '127.0.0.1');
      const received = new Promise<string>((resolve) => {
        let text = '';
        socket.on('data', (d: Buffer) => {
          text += d.toString('latin1');
          if (/\r\n\r\n.+/.test(text)) resolve(text);
        });
      });
      socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhello');
      await new Promise((resolve) => setTimeout(resolve, 30));
      socket.write('world');
      assert.match(await within(received, 'the answer'), /body helloworld$/);
      socket.destroy();
      assert.deepEqual(told, ['body helloworld']);
    });

    it('tells the reader when the body stalls past the request timeout (request_timeout), once', async () => {
      const told: string[] = [];
      handler = (req, res) => startReading(req, 1_000_000, recordingSink(told, () => undefined), res);
      const out = await exchange('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n{"partial":', undefined, 5000);
      assert.match(out, /^HTTP\/1\.1 408 Request Timeout/);
      assert.equal(told.length, 1);
      assert.match(told[0]!, /^failed request_timeout: the request was not received within/);
    });

    it('tells the reader when the client leaves mid-body, once', async () => {
      const told: string[] = [];
      let settle!: () => void;
      const settled = new Promise<void>((resolve) => (settle = resolve));
      handler = (req, res) =>
        startReading(
          req,
          1_000_000,
          recordingSink(told, () => settle()),
          res,
        );
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"partial":');
      await new Promise((resolve) => setTimeout(resolve, 50));
      socket.destroy();
      await settled;
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.deepEqual(told, ['failed invalid_request: the request body could not be read']);
    });
  });
});

/** A Connection over each accepted socket, `prepare` applied to the socket first. */
async function serve(prepare: (socket: Socket) => void, answer: (req: WireRequest, res: WireResponse) => void, maxPipelinedRequests = 16) {
  const owner: ConnectionOwner = {
    handler: answer,
    keepAliveSeconds: 5,
    maxHeaderSize: 16 * 1024,
    maxPipelinedRequests,
    maxStreamBuffer: 4 * 1024 * 1024,
    closing: false,
    forget: () => undefined,
    dropped: () => undefined,
  };
  const net = createServer({ allowHalfOpen: true }, (socket) => {
    prepare(socket);
    new Connection(socket, owner);
  });
  await new Promise<void>((resolve) => net.listen(0, '127.0.0.1', resolve));
  return { port: (net.address() as { port: number }).port, close: () => new Promise((resolve) => net.close(resolve)) };
}

describe('wire server: how a connection reads its socket', () => {
  function send(to: number, bytes: string, until: RegExp): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(to, '127.0.0.1', () => socket.write(bytes));
      let received = '';
      const timer = setTimeout(() => socket.destroy(), 3000);
      socket.on('data', (d) => {
        received += d.toString('latin1');
        if (until.test(received)) socket.destroy();
      });
      socket.on('close', () => {
        clearTimeout(timer);
        resolve(received);
      });
      socket.on('error', reject);
    });
  }

  const handles: boolean[] = [];
  const answer = (req: WireRequest, res: WireResponse): void => {
    handles.push((req.socket as unknown as { _handle: { _consumed?: boolean } })._handle._consumed === true);
    readBody(req).then((body) => res.end(`${req.url} ${body}`), () => res.destroy());
  };
  const pipelined = 'POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhiPOST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nyou\r\n0\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n';

  it('the parser reads the handle of an ordinary socket, pipelined requests and chunked bodies included', async () => {
    handles.length = 0;
    const rig = await serve(() => undefined, answer, 1);
    try {
      const out = await send(rig.port, pipelined, /\/c $/);
      assert.deepEqual([...out.matchAll(/\r\n\r\n(\/\w [a-z]*)/g)].map((m) => m[1]), ['/a hi', '/b you', '/c ']);
      assert.deepEqual(handles, [true, true, true]);
    } finally {
      await rig.close();
    }
  });

  it("a socket whose handle something else reads already is served through 'data' events, the same way", async () => {
    handles.length = 0;
    const rig = await serve((socket) => ((socket as unknown as { _handle: { _consumed?: boolean } })._handle._consumed = true), answer, 1);
    try {
      const out = await send(rig.port, pipelined, /\/c $/);
      assert.deepEqual([...out.matchAll(/\r\n\r\n(\/\w [a-z]*)/g)].map((m) => m[1]), ['/a hi', '/b you', '/c ']);
      assert.equal(handles.length, 3);
      const malformed = await send(rig.port, 'HEAD / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n', /\r\n\r\n/);
      assert.match(malformed, /^HTTP\/1\.1 400 Bad Request\r\n[^]*content-length: \d+\r\n[^]*\r\n\r\n$/);
    } finally {
      await rig.close();
    }
  });

  it('at maxPipelinedRequests 1, reads a body longer than a read to its end (reading pauses after it, not under it)', async () => {
    handles.length = 0;
    const rig = await serve(() => undefined, answer, 1);
    try {
      const body = 'x'.repeat(300_000);
      const out = await send(rig.port, `POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}GET /c HTTP/1.1\r\nHost: x\r\n\r\n`, /\/c $/);
      assert.match(out, /^HTTP\/1\.1 200 OK/);
      assert.equal((out.match(/HTTP\/1\.1 200 OK/g) ?? []).length, 2);
      assert.ok(out.includes(`/big ${body}`));
    } finally {
      await rig.close();
    }
  });

  it('a body reader that throws ends the connection, not the process, when the parser reads the handle', async () => {
    const rig = await serve(() => undefined, (req) => {
      req.readInto({
        chunk: () => {
          throw new Error('a reader that throws');
        },
        end: () => undefined,
        failed: () => undefined,
      });
    });
    try {
      const out = await send(rig.port, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello', /never/);
      assert.equal(out, '');
    } finally {
      await rig.close();
    }
  });
});

describe('wire server: how a connection writes its socket', () => {
  /** Connects, writes `bytes`, reads nothing for `pauseMs`, then everything until `done` says so or the server closes. */
  function slowClient(to: number, bytes: string, pauseMs: number, done: (received: Buffer) => boolean): Promise<{ received: Buffer; resumedAt: number }> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let length = 0;
      let resumedAt = 0;
      const socket = connect(to, '127.0.0.1', () => socket.write(bytes));
      socket.pause();
      setTimeout(() => {
        resumedAt = performance.now();
        socket.resume();
      }, pauseMs);
      const timer = setTimeout(() => socket.destroy(), 10_000);
      socket.on('data', (d: Buffer) => {
        chunks.push(d);
        length += d.length;
        if (done(Buffer.concat(chunks, length))) socket.destroy();
      });
      socket.on('close', () => {
        clearTimeout(timer);
        resolve({ received: Buffer.concat(chunks, length), resumedAt });
      });
      socket.on('error', reject);
    });
  }

  it('writes a small answer to the socket\'s handle, not through its stream, and tells its finish after the write', async () => {
    let streamWrites = 0;
    const finished: string[] = [];
    const rig = await serve(
      (socket) => {
        const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
        (socket as unknown as { write: (...args: unknown[]) => boolean }).write = (...args) => {
          streamWrites++;
          return write(...args);
        };
      },
      (req, res) => {
        let ended = false;
        res.on('finish', () => finished.push(`${req.url} ${ended}`));
        res.end(`answer to ${req.url}`);
        ended = true;
      },
    );
    try {
      const { received } = await slowClient(rig.port, 'GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n', 0, (r) => r.includes('answer to /b'));
      assert.match(received.toString('latin1'), /answer to \/a[\s\S]*answer to \/b$/);
      assert.equal(streamWrites, 0);
      assert.deepEqual(finished, ['/a true', '/b true'], "'finish' comes after end() returned, in order");
    } finally {
      await rig.close();
    }
  });

  it('queues an answer the kernel cannot take at once, tells its finish once it is out, and writes the one pipelined behind it after it', async () => {
    const size = 24 * 1024 * 1024;
    let finishedAt = 0;
    const rig = await serve(
      () => undefined,
      (req, res) => {
        if (req.url === '/big') {
          res.on('finish', () => (finishedAt = performance.now()));
          res.end(Buffer.alloc(size, 'b'));
        } else res.end('small');
      },
    );
    try {
      const { received, resumedAt } = await slowClient(rig.port, 'GET /big HTTP/1.1\r\nHost: x\r\n\r\nGET /small HTTP/1.1\r\nHost: x\r\n\r\n', 200, (r) => r.subarray(-5).toString() === 'small');
      const text = received.toString('latin1');
      const firstBody = text.indexOf('\r\n\r\n') + 4;
      const secondHead = text.indexOf('HTTP/1.1 200', firstBody);
      assert.equal(secondHead - firstBody, size, 'the big body whole, then the next response');
      assert.equal(text.slice(firstBody, secondHead).replaceAll('b', ''), '');
      assert.ok(text.endsWith('\r\n\r\nsmall'));
      assert.ok(finishedAt > resumedAt, "'finish' waited for the client to take the bytes");
    } finally {
      await rig.close();
    }
  });

  it('keeps a streaming writer\'s chunks in order across queued and stream writes, and tells it to go on when they are out', async () => {
    const chunk = 64 * 1024;
    const count = 400;
    let drains = 0;
    const rig = await serve(
      () => undefined,
      (_req, res) => {
        res.writeHead(200, ['content-length', String(chunk * count)]);
        let i = 0;
        const pump = (): void => {
          while (i < count) {
            const data = Buffer.alloc(chunk, 97 + (i % 26));
            i++;
            if (i === count) {
              res.end(data);
              return;
            }
            if (!res.write(data)) {
              res.once('drain', () => {
                drains++;
                pump();
              });
              return;
            }
          }
        };
        pump();
      },
    );
    try {
      const { received } = await slowClient(rig.port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 200, () => false);
      const body = received.subarray(received.indexOf('\r\n\r\n') + 4);
      assert.equal(body.length, chunk * count);
      for (let i = 0; i < count; i++) {
        const block = body.subarray(i * chunk, (i + 1) * chunk);
        assert.ok(block[0] === 97 + (i % 26) && block[chunk - 1] === 97 + (i % 26), `chunk ${i} in its place`);
      }
      assert.ok(drains > 0, 'the writer waited at least once');
    } finally {
      await rig.close();
    }
  });

  it('drops a client that stops reading behind a queued answer, when the pipelined answer after it is queued in turn (send timeout)', async () => {
    // The first answer's completion writes the held second one, which queues too: the connection
    // must count as blocked from then on, or the send timeout would never see it.
    const first = 8 * 1024 * 1024;
    const slow = new WireServer((req, res) => void res.end(Buffer.alloc(req.url === '/a' ? first : 12 * 1024 * 1024, 'x')), { sendTimeoutMs: 1000 });
    const dropped: string[] = [];
    slow.on('dropped', (reason: string) => dropped.push(reason));
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    try {
      const socket = connect((slow.address() as { port: number }).port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.pause();
      socket.write('GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n');
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      await new Promise((resolve) => setTimeout(resolve, 300));
      let got = 0;
      socket.on('data', (chunk: Buffer) => {
        got += chunk.length;
        if (got > first) socket.pause(); // the first answer read, then no more
      });
      socket.resume();
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 6000))]);
      assert.deepEqual(dropped, ['send_timeout']);
      assert.equal(slow.connectionCount, 0);
    } finally {
      slow.closeAllConnections();
      await new Promise((resolve) => slow.close(resolve));
    }
  });

  it('a client that resets while its answer is queued: the response closes without finishing, and the next client is served', async () => {
    let closed: ((finished: boolean) => void) | null = null;
    const outcome = new Promise<boolean>((resolve) => (closed = resolve));
    const rig = await serve(
      () => undefined,
      (req, res) => {
        if (req.url !== '/big') return void res.end('small');
        res.on('close', () => closed!(res.writableFinished));
        res.end(Buffer.alloc(24 * 1024 * 1024, 'b'));
      },
    );
    try {
      const socket = connect(rig.port, '127.0.0.1', () => socket.write('GET /big HTTP/1.1\r\nHost: x\r\n\r\n'));
      socket.pause();
      socket.on('error', () => undefined);
      setTimeout(() => socket.resetAndDestroy(), 100);
      assert.equal(await outcome, false);
      const { received } = await slowClient(rig.port, 'GET /small HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 0, () => false);
      assert.ok(received.toString().endsWith('\r\n\r\nsmall'));
    } finally {
      await rig.close();
    }
  });
});
