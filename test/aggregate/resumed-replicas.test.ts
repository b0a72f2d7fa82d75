/**
 * A routed SSE answer that broke off is resumed (GET + Last-Event-ID) through another gateway
 * process than the one that routed it, both sharing the real Redis (127.0.0.1:6379): the
 * backend replays the stream, and its response reaches the client, once. Which response a
 * resumed stream may carry is sealed into the event ids the client got (a ticket naming the
 * session, the backend and the request: core/mcp/aggregate/resume-tickets.ts), and its delivery
 * is claimed among the replicas in Redis. Before this, the permission lived in the memory of the
 * process that routed the call, and the other one dropped the response (the client timed out).
 *
 * The security rule is kept: a resumed stream carries no response but the one its genuine ticket
 * names (a backend's response to another id, a ticket edited by the client, another session's
 * ticket, an event id without a ticket: dropped), and only once, whichever gateway is asked.
 *
 * Skipped with a reason when Redis does not answer, a failure under CI=true.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { INITIALIZE, post, startTestGateway } from '../helpers/gateway.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';

const VERSION = '2025-11-25';
/** How long a resumed stream may stay silent before the test stops reading it. */
const QUIET_MS = 1_500;
/** An event id of a routed answer that carries a ticket: `<index>~<payload>~<mac>.<backend's id>`. */
const TICKETED = /^(\d+)~([A-Za-z0-9_-]+)~([A-Za-z0-9_-]{22})\.(.+)$/;

/**
 * A backend that replays what an honest one never would: its `run` tool's SSE answer is one
 * progress event (id `p1`) and ends without the response; a GET with Last-Event-ID replays
 * the progress, a response to id 999 (a request it was never sent here), and the response to
 * the last call it got ("real").
 */
async function startReplayingBackend(): Promise<{ url: string; lastCall: () => unknown; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let lastCall: unknown = null;
  const sessions = new Set<string>();
  const event = (id: string, message: unknown): string => `id: ${id}\nevent: message\ndata: ${JSON.stringify(message)}\n\n`;
  const progress = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p', progress: 1 } };
  const server: Server = createServer((req, res) => {
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    if (req.method === 'GET') {
      if (req.headers['last-event-id'] === undefined) return void res.writeHead(405).end();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(event('p1', progress));
      res.write(event('f1', { jsonrpc: '2.0', id: 999, result: { content: [{ type: 'text', text: 'forged' }] } }));
      res.end(event('r1', { jsonrpc: '2.0', id: lastCall, result: { content: [{ type: 'text', text: 'real' }] } }));
      return;
    }
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    req.on('end', () => {
      const message = JSON.parse(text) as { id?: unknown; method?: string };
      const json = (result: unknown): void => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
      if (message.method === 'initialize') {
        const session = `replay-${sessions.size + 1}`;
        sessions.add(session);
        res.setHeader('mcp-session-id', session);
        return json({ protocolVersion: VERSION, capabilities: { tools: {} }, serverInfo: { name: 'replay', version: '1' } });
      }
      if (message.id === undefined) return void res.writeHead(202).end();
      if (message.method === 'tools/list') return json({ tools: [{ name: 'run', inputSchema: { type: 'object' } }] });
      lastCall = message.id;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(event('p1', progress));
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    lastCall: () => lastCall,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The JSON-RPC messages of an SSE body. */
function messagesOf(body: string): Record<string, any>[] {
  return body
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).trim())
    .filter((data) => data !== '')
    .map((data) => JSON.parse(data) as Record<string, any>);
}

const responsesTo = (body: string, id: unknown): Record<string, any>[] => messagesOf(body).filter((m) => m['method'] === undefined && m['id'] === id);
const progressOf = (body: string): number => messagesOf(body).filter((m) => m['method'] === 'notifications/progress').length;

describe('a routed stream resumed through another gateway process (Redis)', () => {
  let redis: LocalRedis | null = null;
  let skip: string | null = null;
  let ask: SdkServer;
  let replay: Awaited<ReturnType<typeof startReplayingBackend>>;
  let a: RunningVmcp;
  let b: RunningVmcp;
  let aStopped = false;

  before(async () => {
    const opened = await openLocalRedis();
    if ('skip' in opened) {
      skip = opened.skip;
      return;
    }
    redis = opened;
    ask = await startSdkServer({ name: 'ask', tools: ['echo', 'slow'] });
    replay = await startReplayingBackend();
    const config = `session: {storage: {type: redis, redis: {addr: "${redis.config.address}", keyPrefix: "${redis.keyPrefix}"}}}, operational: {failureHandling: {healthCheckInterval: 0s}}`;
    const start = (): ReturnType<typeof startTestGateway> => startTestGateway({ backends: [{ name: 'ask', url: ask.url }, { name: 'replay', url: replay.url }], config });
    [a, b] = await Promise.all([start(), start()]);
  });
  after(async () => {
    if (redis === null) return;
    if (!aStopped) await a.stop();
    await b.stop();
    await ask.close();
    await replay.close();
    await redis.cleanup();
  });

  /** A new session, through `url`: its headers. */
  async function open(url: string): Promise<Record<string, string>> {
    const init = await post(url, INITIALIZE);
    assert.equal(init.status, 200, init.text);
    const headers = { 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': VERSION };
    await post(url, '{"jsonrpc":"2.0","method":"notifications/initialized"}', headers);
    return headers;
  }

  /** POSTs a tools/call to `url` and leaves once the first event id has come (or the stream ended): that id, and what was read. */
  async function breakOff(url: string, session: Record<string, string>, id: number, name: string, args: Record<string, unknown>): Promise<{ eventId: string; text: string }> {
    const abort = new AbortController();
    const res = await fetch(url, {
      method: 'POST',
      signal: abort.signal,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...session },
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta: { progressToken: id } } }),
    });
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (value !== undefined) text += decoder.decode(value, { stream: true });
      const match = /^id: ?(.+)$/m.exec(text);
      if (match !== null) {
        abort.abort();
        return { eventId: match[1]!.trim(), text };
      }
      assert.ok(!done, `the stream ended without an event id: ${text}`);
    }
  }

  /**
   * GET with Last-Event-ID `eventId` through `url`: the resumed stream, until it ends or stays
   * quiet for QUIET_MS (the SDK backend keeps a replayed stream open when the call it resumes
   * has ended: only the live response ends it).
   */
  async function resume(url: string, session: Record<string, string>, eventId: string): Promise<string> {
    const abort = new AbortController();
    const res = await fetch(url, { signal: abort.signal, headers: { accept: 'text/event-stream', ...session, 'last-event-id': eventId } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    for (;;) {
      let quiet: NodeJS.Timeout | undefined;
      const next = await Promise.race([reader.read(), new Promise<null>((resolve) => (quiet = setTimeout(() => resolve(null), QUIET_MS)))]);
      clearTimeout(quiet);
      if (next === null) {
        abort.abort();
        return text;
      }
      if (next.value !== undefined) text += decoder.decode(next.value, { stream: true });
      if (next.done) return text;
    }
  }

  it('the response of a stream broken off on A reaches the client through B, once; a second resumption (through either) drops it', async (t) => {
    if (skip !== null) return t.skip(skip);
    const session = await open(a.url);
    const { eventId, text } = await breakOff(a.url, session, 11, 'ask_slow', { steps: 10, delayMs: 100 });
    assert.equal(responsesTo(text, 11).length, 0, 'the call broke off before its response');
    assert.match(eventId, TICKETED, 'the event id carries a ticket');
    assert.equal(TICKETED.exec(eventId)![1], '0', 'and names the backend (ask)');

    const first = await resume(b.url, session, eventId);
    assert.ok(progressOf(first) >= 9, `the backend replayed the progress: ${first}`);
    const delivered = responsesTo(first, 11);
    assert.equal(delivered.length, 1, `the response, once: ${first}`);
    assert.equal(delivered[0]!['result']?.['content']?.[0]?.['text'], 'done');

    // The delivery is claimed where every replica sees it.
    const claims = await redis!.admin.keys(`${redis!.keyPrefix}vmcp:claim:resume:*`);
    assert.equal(claims.length, 1, `one claim: ${claims.join(', ')}`);
    assert.ok((await redis!.admin.pttl(claims[0]!)) > 0, 'with a time to live');

    for (const [gateway, url] of [['A (which routed it)', a.url], ['B (which delivered it)', b.url]] as const) {
      const again = await resume(url, session, eventId);
      assert.ok(progressOf(again) >= 9, `through ${gateway} the rest of the stream still passes`);
      assert.equal(responsesTo(again, 11).length, 0, `through ${gateway} the response is not delivered again: ${again}`);
    }
  });

  it('a call resumed through the gateway that routed it is delivered there, once (as with one process)', async (t) => {
    if (skip !== null) return t.skip(skip);
    const session = await open(b.url);
    const { eventId } = await breakOff(b.url, session, 21, 'ask_slow', { steps: 5, delayMs: 50 });
    assert.equal(responsesTo(await resume(b.url, session, eventId), 21).length, 1);
    assert.equal(responsesTo(await resume(a.url, session, eventId), 21).length, 0);
  });

  it('a response that reached the client on its own stream is not delivered by a resumption through the same gateway', async (t) => {
    if (skip !== null) return t.skip(skip);
    const session = await open(a.url);
    const answer = await post(a.url, JSON.stringify({ jsonrpc: '2.0', id: 31, method: 'tools/call', params: { name: 'ask_slow', arguments: { steps: 2, delayMs: 10 }, _meta: { progressToken: 31 } } }), session);
    assert.equal(responsesTo(answer.text, 31).length, 1);
    const eventId = /^id: ?(.+)$/m.exec(answer.text)![1]!.trim();
    assert.equal(responsesTo(await resume(a.url, session, eventId), 31).length, 0);
  });

  it('a resumed stream carries no response but the one its genuine ticket names', async (t) => {
    if (skip !== null) return t.skip(skip);
    const session = await open(a.url);
    const { eventId } = await breakOff(a.url, session, 41, 'replay_run', {});
    const [, index, payload, mac, position] = TICKETED.exec(eventId)!;
    assert.equal(index, '1');
    assert.equal(position, 'p1');

    // An edited ticket: the client names request 999 (whose response the backend replays) instead of 41.
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')) as [string, number, number];
    assert.equal(claims[1], 41, 'the ticket names the request');
    const edited = `${index}~${Buffer.from(JSON.stringify([claims[0], 999, claims[2]])).toString('base64url')}~${mac}.${position}`;
    const refused = await resume(b.url, session, edited);
    assert.equal(progressOf(refused), 1, 'the stream is resumed');
    assert.deepEqual([responsesTo(refused, 999).length, responsesTo(refused, 41).length], [0, 0], `no response passes on an edited ticket: ${refused}`);

    // No ticket at all (the form of an id without one).
    const bare = await resume(b.url, session, `1.p1`);
    assert.deepEqual([responsesTo(bare, 999).length, responsesTo(bare, 41).length, progressOf(bare)], [0, 0, 1]);

    // Another session's ticket.
    const other = await open(b.url);
    const elsewhere = await resume(b.url, other, eventId);
    assert.deepEqual([responsesTo(elsewhere, 999).length, responsesTo(elsewhere, 41).length], [0, 0], 'a ticket is its session\'s');

    // The genuine ticket: the response to 41 passes (once), the backend's response to 999 never.
    assert.equal(replay.lastCall(), 41);
    const genuine = await resume(b.url, session, eventId);
    assert.equal(responsesTo(genuine, 999).length, 0, `a response to a request this stream was not sent is dropped: ${genuine}`);
    assert.equal(responsesTo(genuine, 41).length, 1);
    const twice = await resume(a.url, session, eventId);
    assert.deepEqual([responsesTo(twice, 999).length, responsesTo(twice, 41).length], [0, 0]);
  });

  it('with the gateway that routed the call gone, the other one delivers its response', async (t) => {
    if (skip !== null) return t.skip(skip);
    const session = await open(a.url);
    const { eventId } = await breakOff(a.url, session, 51, 'ask_slow', { steps: 10, delayMs: 100 });
    await a.stop();
    aStopped = true;
    const resumed = await resume(b.url, session, eventId);
    assert.equal(responsesTo(resumed, 51).length, 1, resumed);
  });
});
