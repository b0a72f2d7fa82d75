/**
 * The legacy HTTP+SSE channel against servers that misbehave, each a small scripted HTTP server:
 * an endpoint on another origin, with a line break or NUL, too long, or never announced; an event
 * past the bound; messages that are not JSON-RPC; the GET refused, not an event stream, or ended.
 * Whatever the server does, the channel reports `closed` once (or goes on), holds no more than
 * its bounds, and sends nothing where the server points outside the backend's origin.
 * (The POSTs, their order and what waits for the endpoint: message-posts.test.ts.)
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { freePort, waitFor } from '../fixtures/processes.ts';
import type { BackendTransport } from '../../core/upstream/transport.ts';
import { eventStream, scenario, messageEvent, openChannel, startScripted, type Script, type ScriptedServer } from './channel-harness.ts';

const ENDPOINT = 'event: endpoint\ndata: /messages?sessionId=s1\n\n';
const INITIALIZED = { jsonrpc: '2.0', method: 'notifications/initialized' } as const;

/** A server that opens its stream with `events` and takes every POST with 202. */
function streamWith(...events: string[]): Script {
  return (req, res) => {
    if (req.method === 'GET') eventStream(res, ...events);
    else res.writeHead(202).end('Accepted');
  };
}


const posts = (server: ScriptedServer): number => server.received.filter((r) => r.method === 'POST').length;
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('the endpoint a legacy SSE server announces', () => {
  let elsewhere: ScriptedServer;
  before(async () => {
    elsewhere = await startScripted((_req, res) => void res.writeHead(202).end());
  });
  after(async () => {
    await elsewhere.close();
  });

  it('is refused on another origin, and nothing queued before it is sent there', async () => {
    await scenario(streamWith(`event: endpoint\ndata: ${elsewhere.origin}/messages?sessionId=s1\n\n`), {}, async (open, server) => {
      assert.equal(open.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }), null);
      const closed = await open.probe.closedWith();
      assert.equal(closed.message, `announced an endpoint on another origin (${elsewhere.origin}): refused`);
      await pause(100);
      assert.deepEqual(elsewhere.received, []);
      assert.equal(posts(server), 0);
    });
  });

  for (const [endpoint, origin] of [
    ['https://evil.example/messages', 'https://evil.example'],
    ['//evil.example:8080/messages', 'http://evil.example:8080'],
  ] as const) {
    it(`is refused at ${endpoint}, naming the origin`, async () => {
      await scenario(streamWith(`event: endpoint\ndata: ${endpoint}\n\n`), {}, async (open) => {
        assert.equal((await open.probe.closedWith()).message, `announced an endpoint on another origin (${origin}): refused`);
      });
    });
  }

  it('is refused on the same host with another scheme', async () => {
    const server = await startScripted(() => {});
    const port = new URL(server.origin).port;
    await server.close();
    await scenario(streamWith(`event: endpoint\ndata: https://127.0.0.1:${port}/messages\n\n`), {}, async (open) => {
      assert.match((await open.probe.closedWith()).message, /^announced an endpoint on another origin \(https:\/\/127\.0\.0\.1:\d+\): refused$/);
    });
  });

  for (const [what, data] of [
    ['a line break (two data lines)', 'data: /messages?sessionId=s1\ndata: Host: evil.example'],
    ['a NUL', 'data: /messages?sessionId=s1\u0000x'],
    ['a tab', 'data: /mess\tages'],
  ] as const) {
    it(`is refused with ${what} in it`, async () => {
      await scenario(streamWith(`event: endpoint\n${data}\n\n`), {}, async (open, server) => {
        open.send(INITIALIZED);
        const closed = await open.probe.closedWith();
        assert.equal(closed.message, 'announced a message endpoint with a control character (CR, LF, NUL...) in it: refused');
        await pause(50);
        assert.equal(posts(server), 0);
      });
    });
  }

  it('is refused over 8 KiB', async () => {
    await scenario(streamWith(`event: endpoint\ndata: /${'a'.repeat(9000)}\n\n`), {}, async (open) => {
      assert.equal((await open.probe.closedWith()).message, 'announced a message endpoint longer than 8 KiB: refused');
    });
  });

  it('closes the channel when it is not announced within timeoutMs', async () => {
    const started = performance.now();
    await scenario(streamWith(': keep-alive\n\n', messageEvent({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'early' } })), { timeoutMs: 300 }, async (open) => {
      const closed = await open.probe.closedWith();
      const elapsed = performance.now() - started;
      assert.equal(closed.message, 'did not announce its message endpoint within 300 ms');
      assert.ok(elapsed >= 290 && elapsed < 2_000, `closed after ${elapsed} ms`);
      // A message before the endpoint is still the server's: delivered.
      assert.equal(open.probe.messages.length, 1);
    });
  });

  it('is resolved against the stream URL, relative or absolute on its origin; a second one is ignored', async () => {
    const relative = await startScripted(streamWith('event: endpoint\ndata: messages?sessionId=rel\n\n', 'event: endpoint\ndata: /other\n\n'));
    const open = openChannel(relative.url);
    try {
      assert.equal(open.send(INITIALIZED), null);
      await waitFor(() => posts(relative) === 1);
      assert.equal(relative.received.find((r) => r.method === 'POST')!.url, '/messages?sessionId=rel');
      assert.equal(open.send(INITIALIZED), null);
      await waitFor(() => posts(relative) === 2);
      assert.deepEqual(relative.received.filter((r) => r.method === 'POST').map((r) => r.url), ['/messages?sessionId=rel', '/messages?sessionId=rel']);
      assert.ok(open.logs.some((line) => String(line.msg).includes('announced a second message endpoint: ignored')));
    } finally {
      await open.dispose();
      await relative.close();
    }
  });

  it('is taken as an absolute URL on the backend origin (path and query only on the wire)', async () => {
    let origin = '';
    const server = await startScripted((req, res) => (req.method === 'GET' ? eventStream(res, `event: endpoint\ndata: ${origin}/abs/p a?s=1 2#frag\n\n`) : res.writeHead(202).end()));
    origin = server.origin;
    const open = openChannel(server.url);
    try {
      assert.equal(open.send(INITIALIZED), null);
      await waitFor(() => posts(server) === 1);
      assert.equal(server.received.find((r) => r.method === 'POST')!.url, '/abs/p%20a?s=1%202');
      assert.equal(open.probe.closes.length, 0);
    } finally {
      await open.dispose();
      await server.close();
    }
  });
});

describe('the events of a legacy SSE stream', () => {
  it('closes the channel on an event larger than maxResponseBytes', async () => {
    const huge = `event: message\ndata: ${'x'.repeat(100 * 1024)}`;
    await scenario(streamWith(ENDPOINT, huge), { maxResponseBytes: 64 * 1024 }, async (open) => {
      const closed = await open.probe.closedWith();
      assert.equal(closed.message, 'sent an event larger than 64 KiB on its event stream (operational.maxBackendResponseSize)');
    });
  });

  it('skips what is not JSON-RPC (logged, bounded), ignores other events, and delivers a batch message by message', async () => {
    const invalid = ['event: message\ndata: not json\n\n', messageEvent({ jsonrpc: '1.0', method: 'x' }), messageEvent([]), `event: message\ndata: ${'['.repeat(300)}${']'.repeat(300)}\n\n`];
    const noise = Array.from({ length: 20 }, (_, i) => messageEvent({ jsonrpc: '2.0', id: null, method: `bad-${i}` }));
    const batch = messageEvent([
      { jsonrpc: '2.0', method: 'notifications/one' },
      { jsonrpc: '2.0', method: 'notifications/two' },
      { jsonrpc: '2.0', result: {} },
    ]);
    const other = `event: ping\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/other' })}\n\n`;
    const last = `data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/last' })}\n\n`;
    await scenario(streamWith(ENDPOINT, ...invalid, ...noise, other, batch, last), {}, async (open) => {
      await waitFor(() => open.probe.messages.some((m) => 'method' in m && m.method === 'notifications/last'));
      assert.deepEqual(
        open.probe.messages.map((m) => ('method' in m ? m.method : 'response')),
        ['notifications/one', 'notifications/two', 'notifications/last'],
      );
      const warnings = open.logs.filter((line) => String(line.msg).includes('not JSON-RPC') || String(line.msg).includes('invalid messages'));
      assert.equal(warnings.length, 11);
      assert.ok(warnings.every((line) => String(line.data ?? '').length <= 201));
      assert.equal(open.probe.closes.length, 0);
    });
  });
});

describe('the event stream of a legacy SSE server', () => {
  it('is refused when the GET is answered 401', async () => {
    await scenario((_req, res) => void res.writeHead(401, { 'www-authenticate': 'Bearer' }).end('no'), {}, async (open) => {
      assert.equal((await open.probe.closedWith()).message, 'could not open its event stream (HTTP 401)');
    });
  });

  it('is refused when the GET is answered 200 with something else than an event stream', async () => {
    await scenario((_req, res) => void res.writeHead(200, { 'content-type': 'text/html' }).end('<html>'), {}, async (open) => {
      assert.equal((await open.probe.closedWith()).message, 'could not open its event stream (it answered 200 with content-type "text/html", not text/event-stream)');
    });
  });

  it('is unavailable when nothing listens', async () => {
    const port = await freePort();
    const open = openChannel(`http://127.0.0.1:${port}/sse`);
    try {
      assert.equal((await open.probe.closedWith()).message, 'is unavailable (connection refused)');
    } finally {
      await open.dispose();
    }
  });

  it('reports closed once when the server ends it, and close() after it still resolves', async () => {
    await scenario((req, res) => (req.method === 'GET' ? (eventStream(res, ENDPOINT), setTimeout(() => res.end(), 50)) : res.writeHead(202).end()), {}, async (open) => {
      assert.equal((await open.probe.closedWith()).message, 'closed its event stream');
      await open.channel.close();
      await pause(50);
      assert.equal(open.probe.closes.length, 1);
    });
  });

  it('reports a stream cut short as closed, with the reason', async () => {
    await scenario((req, res) => (req.method === 'GET' ? (eventStream(res, ENDPOINT), setTimeout(() => res.socket?.destroy(), 50)) : res.writeHead(202).end()), {}, async (open) => {
      assert.match((await open.probe.closedWith()).message, /^closed its event stream: it failed \(connection reset\)$/);
    });
  });

  it('close() aborts the stream and the POSTs in flight, and reports closed once', async () => {
    const held: ServerResponse[] = [];
    const script: Script = (req, res) => (req.method === 'GET' ? eventStream(res, ENDPOINT) : void held.push(res));
    await scenario(script, {}, async (open, server) => {
      assert.equal(open.send({ jsonrpc: '2.0', id: 7, method: 'tools/list' }), null);
      await waitFor(() => held.length === 1);
      assert.equal(server.open.size, 2);
      await open.channel.close();
      assert.equal(open.probe.closes.length, 1);
      assert.equal(open.probe.closes[0]!.message, 'was closed by the gateway');
      await waitFor(() => server.open.size === 0);
      assert.equal(open.send({ jsonrpc: '2.0', id: 8, method: 'tools/list' }), open.probe.closes[0]);
      await pause(50);
      assert.deepEqual(open.probe.messages, []);
    });
  });

  it('close() before a queueing transport sent the GET: the GET stops when it is sent, and nothing reaches the server', async () => {
    // A transport that sends the GET later and forgets nothing (cancel does nothing): only the exchange can stop it.
    const later = (pool: BackendTransport): BackendTransport => ({
      dispatch: (...args) => void setTimeout(() => pool.dispatch(...args), 50),
      cancel: () => {},
      refusal: () => null,
      close: () => pool.close(),
    });
    await scenario(streamWith(ENDPOINT), { streamThrough: later }, async (open, server) => {
      await open.channel.close();
      assert.equal(open.probe.closes[0]!.message, 'was closed by the gateway');
      await pause(150);
      assert.deepEqual(server.received, []);
    });
  });
});
