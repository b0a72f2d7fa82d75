/**
 * Bad input, each answered with a clear error naming the problem — and the gateway keeps
 * serving afterwards.
 */
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { connectClient } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { freePort } from '../fixtures/processes.ts';
import { INITIALIZE, post, startTestGateway } from '../helpers/gateway.ts';
import { rawExchange, rawRequestBytes } from '../helpers/raw-http.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';

interface RpcError {
  jsonrpc: string;
  id: unknown;
  error: { code: number; message: string; data: { error: string } };
}

/** A raw HTTP/1.1 exchange, for requests fetch would not send (bad Host, chunked bodies, ...). */
function raw(url: string, options: { method?: string; headers?: Record<string, string | number>; chunks?: (string | Buffer)[] }): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'POST', headers: options.headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    for (const chunk of options.chunks ?? []) req.write(chunk);
    req.end();
  });
}

describe('bad input on the MCP endpoint', () => {
  let backend: SdkServer;
  let gateway: RunningVmcp;

  before(async () => {
    backend = await startSdkServer({ name: 'alpha' });
    gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: backend.url }],
      spec: '  server: {maxBodySize: 64Ki, requestTimeout: 1s, allowedOrigins: ["https://app.example.com"]}',
    });
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
  });

  it('413 for a body declared over the cap, before reading it, as a JSON-RPC error', async () => {
    const res = await raw(gateway.url, { headers: { 'content-type': 'application/json', 'content-length': 5 * 1024 * 1024 } });
    assert.equal(res.status, 413);
    assert.equal(res.headers.connection, 'close');
    const body = JSON.parse(res.body) as RpcError;
    assert.equal(body.error.data.error, 'payload_too_large');
    assert.match(body.error.message, /exceeds the limit of 65536 bytes/);
  });

  it('413 for a chunked body that grows over the cap while it is read', async () => {
    const chunk = Buffer.alloc(16 * 1024, 'x');
    const res = await raw(gateway.url, { headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, chunks: [chunk, chunk, chunk, chunk, chunk] });
    assert.equal(res.status, 413);
    assert.equal((JSON.parse(res.body) as RpcError).error.data.error, 'payload_too_large');
  });

  it('400 with a JSON-RPC parse error (-32700) for malformed JSON', async () => {
    const res = await post(gateway.url, '{"jsonrpc": "2.0", "id": 1, "method": ');
    assert.equal(res.status, 400);
    const body = res.json as RpcError;
    assert.equal(body.error.code, -32700);
    assert.equal(body.id, null);
    assert.match(body.error.message, /not valid JSON/);
  });

  it('400 with an invalid-request error (-32600) for JSON that is not JSON-RPC, naming the problem', async () => {
    for (const [payload, message] of [
      ['{"id":1,"method":"tools/list"}', /jsonrpc must be "2.0"/],
      ['{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}', /id must be a string or a number/],
      ['[]', /empty batch/],
      ['"hello"', /must be an object/],
    ] as const) {
      const res = await post(gateway.url, payload);
      assert.equal(res.status, 400, payload);
      const body = res.json as RpcError;
      assert.equal(body.error.code, -32600, payload);
      assert.match(body.error.message, message, payload);
    }
  });

  it('400 HeaderMismatch (-32020) when Mcp-Method disagrees with the body, and nothing reaches the backend', async () => {
    const before = backend.received.length;
    const res = await post(gateway.url, INITIALIZE, { 'mcp-method': 'tools/call' });
    assert.equal(res.status, 400);
    const body = res.json as RpcError;
    assert.equal(body.error.code, -32020);
    assert.equal(body.id, 1);
    assert.equal(backend.received.length, before);
  });

  it('415 for a body that is not application/json', async () => {
    const res = await post(gateway.url, INITIALIZE, { 'content-type': 'text/plain' });
    assert.equal(res.status, 415);
    assert.match((res.json as RpcError).error.message, /Content-Type must be application\/json/);
  });

  it('405 with Allow for other methods on the MCP endpoint', async () => {
    const res = await raw(gateway.url, { method: 'PUT', headers: { 'content-type': 'application/json' }, chunks: ['{}'] });
    assert.equal(res.status, 405);
    assert.equal(res.headers.allow, 'GET, POST, DELETE, OPTIONS');
  });

  it('404 JSON for an unknown path', async () => {
    const res = await fetch(new URL('/nowhere', gateway.url));
    assert.equal(res.status, 404);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.deepEqual(await res.json(), { error: 'not_found', error_description: 'no route for GET /nowhere' });
  });

  it('403 for a Host that is not the gateway (DNS rebinding), before anything else runs', async () => {
    const before = backend.received.length;
    const res = await raw(gateway.url, { headers: { host: 'rebound.attacker.example:80', 'content-type': 'application/json' }, chunks: [INITIALIZE] });
    assert.equal(res.status, 403);
    assert.equal((JSON.parse(res.body) as RpcError).error.data.error, 'forbidden_host');
    assert.equal(backend.received.length, before);
  });

  it('403 for a browser Origin that is not allowed; an allowed one gets CORS headers', async () => {
    const denied = await post(gateway.url, INITIALIZE, { origin: 'https://evil.example' });
    assert.equal(denied.status, 403);
    assert.equal((denied.json as RpcError).error.data.error, 'forbidden_origin');

    const preflight = await fetch(gateway.url, { method: 'OPTIONS', headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' } });
    assert.equal(preflight.status, 204);
    assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /mcp-session-id/);

    const allowed = await post(gateway.url, INITIALIZE, { origin: 'https://app.example.com' });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.headers.get('access-control-allow-origin'), 'https://app.example.com');
    assert.match(allowed.headers.get('access-control-expose-headers') ?? '', /mcp-session-id/);
  });

  it('400 for a request with two Host headers (RFC 9112 §3.2), before anything reads either', async () => {
    const before = backend.received.length;
    const answer = await rawExchange(gateway.url, rawRequestBytes('POST', gateway.url, [['host', new URL(gateway.url).host], ['host', 'rebound.attacker.example'], ['content-type', 'application/json'], ['connection', 'close']], INITIALIZE));
    assert.equal(answer.status, 400);
    assert.match(answer.body, /more than one Host header/);
    assert.equal(backend.received.length, before);
  });

  it('serves Upgrade: h2c on a POST and Upgrade: websocket on a GET as the HTTP/1.1 requests they are, each the last of its connection', async () => {
    const before = backend.received.length;
    const smuggled = rawRequestBytes('POST', gateway.url, [['content-type', 'application/json']], JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }));
    const h2c = await rawExchange(
      gateway.url,
      rawRequestBytes('POST', gateway.url, [['content-type', 'application/json'], ['accept', 'application/json, text/event-stream'], ['connection', 'Upgrade, HTTP2-Settings'], ['upgrade', 'h2c'], ['http2-settings', 'AAMAAABkAARAAAAAAAIAAAAA']], INITIALIZE) + smuggled,
      3000,
    );
    assert.equal(h2c.status, 200);
    assert.doesNotMatch(h2c.text, /101 Switching/);
    assert.equal(h2c.text.match(/HTTP\/1\.1 \d{3}/g)?.length, 1, 'one answer: the request after it is not read');
    assert.ok(h2c.headLines.some((line) => /^connection: close$/i.test(line)));
    const received = backend.received.slice(before);
    assert.deepEqual(received.map((r) => r.rpcMethods.join()), ['initialize'], 'the pipelined request never reached the backend');
    assert.equal(received[0]!.headers.upgrade, undefined, 'Upgrade is hop-by-hop: not forwarded');
    assert.equal(received[0]!.headers['http2-settings'], undefined, 'nor what Connection lists');
    const websocket = await rawExchange(gateway.url, rawRequestBytes('GET', new URL('/healthz', gateway.url).href, [['connection', 'Upgrade'], ['upgrade', 'websocket'], ['sec-websocket-key', 'dGhlIHNhbXBsZSBub25jZQ=='], ['sec-websocket-version', '13']]), 3000, true);
    assert.equal(websocket.status, 200);
    assert.match(websocket.body, /"status":"ok"/);
  });

  it('closes the connection when it answers before the body was read (no second, late answer to the same request)', async () => {
    const answer = await rawExchange(gateway.url, rawRequestBytes('POST', new URL('/nowhere', gateway.url).href, [['content-type', 'application/json']], '').replace('content-length: 0', 'content-length: 500') + '{"a', 3000);
    assert.equal(answer.status, 404);
    assert.ok(answer.headLines.some((line) => /^connection: close$/i.test(line)), answer.text);
    assert.equal(answer.text.match(/HTTP\/1\.1 \d{3}/g)?.length, 1, `one answer only: ${answer.text}`);
  });

  it('408 for a body that stalls past requestTimeout, and the connection is closed', async () => {
    const started = Date.now();
    const answer = await rawExchange(gateway.url, rawRequestBytes('POST', gateway.url, [['content-type', 'application/json']], '').replace('content-length: 0', 'content-length: 60000') + '{"jsonrpc":', 15_000);
    assert.equal(answer.status, 408, answer.text);
    assert.ok(Date.now() - started < 15_000, `answered after ${Date.now() - started} ms, the connection closed`);
  });

  it('survives garbage: truncated requests, binary bodies and a flood of odd headers', async () => {
    const { port } = new URL(gateway.url);
    await new Promise<void>((resolve) => {
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{"jsonrpc"');
        socket.destroy();
        resolve();
      });
    });
    await new Promise<void>((resolve) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.write('GARBAGE\r\n\r\n'));
      socket.on('data', () => socket.destroy());
      socket.on('close', () => resolve());
    });
    const binary = await post(gateway.url, Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x7b]));
    assert.equal(binary.status, 400);
    const headers: Record<string, string> = {};
    for (let i = 0; i < 50; i++) headers[`x-odd-${i}`] = 'v'.repeat(100);
    assert.equal((await post(gateway.url, INITIALIZE, headers)).status, 200);
    const health = await fetch(new URL('/healthz', gateway.url));
    assert.equal(health.status, 200);
    // And a real client still works.
    const c = await connectClient(gateway.url);
    assert.ok((await c.client.listTools()).tools.length > 0);
    await c.close();
  });
});

describe('backend failures', () => {
  it('502 naming the backend when it is down; recovers when it is back', async () => {
    const port = await freePort();
    const gateway = await startTestGateway({ backends: [{ name: 'down-one', url: `http://127.0.0.1:${port}/mcp` }] });
    try {
      const res = await post(gateway.url, INITIALIZE);
      assert.equal(res.status, 502);
      const body = res.json as RpcError;
      assert.equal(body.id, 1);
      assert.equal(body.error.data.error, 'backend_unavailable');
      assert.match(body.error.message, /backend "down-one" is unavailable \(connection refused\)/);

      const backend = await startSdkServer({ name: 'down-one', port });
      try {
        assert.equal((await post(gateway.url, INITIALIZE)).status, 200);
      } finally {
        await backend.close();
      }
    } finally {
      await gateway.stop();
    }
  });

  it('504 naming the backend when it does not answer within its timeout', async () => {
    const silent: Server = createServer(() => {
      /* never answers */
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const gateway = await startTestGateway({ backends: [{ name: 'sleepy', url: `http://127.0.0.1:${port}/mcp`, timeout: '300ms' }] });
    try {
      const started = Date.now();
      const res = await post(gateway.url, INITIALIZE);
      assert.equal(res.status, 504);
      assert.ok(Date.now() - started < 10_000);
      const body = res.json as RpcError;
      assert.equal(body.error.data.error, 'backend_timeout');
      assert.match(body.error.message, /backend "sleepy" did not answer within 300 ms/);
    } finally {
      await gateway.stop();
      silent.closeAllConnections();
      silent.close();
    }
  });
});
