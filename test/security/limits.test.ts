/**
 * The limits an operator sets on what one client may hold (`server.maxSessionRequests`,
 * `maxStreamBuffer`, `maxConnections`), through the whole gateway:
 * - a session with as many requests in flight as allowed gets 429 with a JSON-RPC error that names
 *   the limit, other sessions are untouched, and the session goes on once a request ends — in
 *   transparent and aggregated mode;
 * - an aggregated session's GET stream whose client stops reading while a backend floods it with
 *   notifications is dropped at the buffer limit, the gateway's memory stays bounded, and the
 *   session itself keeps working;
 * - the limits show in /metrics, and bad values are refused naming their YAML path.
 */
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { randomUUID } from 'node:crypto';
import { loadVmcpConfig } from '../../core/config/vmcp-config.ts';
import { freePort } from '../fixtures/processes.ts';
import { inlineOidcYaml } from '../incoming-auth/helpers/gateway.ts';
import { KeyIssuer } from '../incoming-auth/helpers/key-issuer.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { openRawSession, post, startTestGateway, vmcpYaml, writeConfig } from '../helpers/gateway.ts';
import type { Context } from '../../core/plugin-api/context.ts';
import type { PluginSpec } from '../../core/plugin-api/plugin-loader.ts';

const session = openRawSession;

const call = (id: number, name: string, args: Record<string, unknown>): string => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

async function metric(gateway: RunningVmcp, line: RegExp): Promise<number> {
  const text = await (await fetch(new URL('/metrics', gateway.url))).text();
  const match = line.exec(text);
  return match === null ? 0 : Number(match[1]);
}

for (const mode of ['transparent', 'aggregated'] as const) {
  describe(`${mode} mode: server.maxSessionRequests`, () => {
    let alpha: SdkServer;
    let beta: SdkServer;
    let gateway: RunningVmcp;

    before(async () => {
      alpha = await startSdkServer({ name: 'alpha' });
      beta = await startSdkServer({ name: 'beta' });
      gateway = await startTestGateway({
        backends: mode === 'transparent' ? [{ name: 'alpha', url: alpha.url }] : [{ name: 'alpha', url: alpha.url }, { name: 'beta', url: beta.url }],
        spec: '  server: {maxSessionRequests: 2}',
      });
    });
    after(async () => {
      await gateway.stop();
      await alpha.close();
      await beta.close();
    });

    it('answers 429 past the limit, leaves other sessions alone, and serves the session again once a call ends', async () => {
      const slowName = mode === 'transparent' ? 'slow' : 'alpha_slow';
      const echoName = mode === 'transparent' ? 'echo' : 'alpha_echo';
      const mine = await session(gateway.url);
      const other = await session(gateway.url);
      const slow = [1, 2].map((id) => post(gateway.url, call(id, slowName, { steps: 2, delayMs: 400 }), mine));
      await new Promise((resolve) => setTimeout(resolve, 150));
      const refused = await post(gateway.url, call(3, echoName, { text: 'one too many' }), mine);
      assert.equal(refused.status, 429, refused.text);
      assert.equal(refused.headers.get('retry-after'), '1');
      const error = (refused.json as { id: unknown; error: { code: number; message: string } }).error;
      assert.equal(error.code, -32000);
      assert.match(error.message, /2 requests in flight.*server\.maxSessionRequests/);
      // Refused before the body is read, as the other transport refusals (origin, draining): id null.
      assert.equal((refused.json as { id: unknown }).id, null);
      // Another session of the same gateway is not limited by this one.
      const theirs = await post(gateway.url, call(4, echoName, { text: 'other session' }), other);
      assert.equal(theirs.status, 200, theirs.text);
      assert.match(theirs.text, /other session/);
      for (const answer of await Promise.all(slow)) assert.match(answer.text, /done/);
      const again = await post(gateway.url, call(5, echoName, { text: 'after' }), mine);
      assert.equal(again.status, 200, again.text);
      assert.match(again.text, /after/);
      assert.equal(await metric(gateway, /gatehouse_limit_refusals_total\{limit="session_requests"\} (\d+)/), 1);
    });
  });

  describe(`${mode} mode: server.maxSessionRequests and a client that leaves while it is authenticated`, () => {
    let alpha: SdkServer;
    let gateway: RunningVmcp;
    // An authenticate hook that takes its time when asked to (as a first JWKS fetch or an
    // introspection does): the client can leave before the request is counted.
    const slowAuth: PluginSpec = {
      definition: {
        name: 'slow-auth',
        create: () => ({
          name: 'slow-auth',
          authenticate: (ctx: Context) => (ctx.req.headers['x-slow'] === undefined ? undefined : new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 300))),
        }),
      },
      config: {},
      source: 'test',
    };

    before(async () => {
      alpha = await startSdkServer({ name: 'alpha' });
      const beta = mode === 'aggregated' ? await startSdkServer({ name: 'beta' }) : null;
      gateway = await startTestGateway({
        backends: [{ name: 'alpha', url: alpha.url }, ...(beta === null ? [] : [{ name: 'beta', url: beta.url }])],
        spec: '  server: {maxSessionRequests: 2}',
        plugins: [slowAuth],
      });
      if (beta !== null) after(() => beta.close());
    });
    after(async () => {
      await gateway.stop();
      await alpha.close();
    });

    it('a request whose client left before it was counted is not counted: the session is not locked out', async () => {
      const headers = await session(gateway.url);
      const url = new URL(gateway.url);
      const body = JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' });
      const sessionHeaders = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
      for (let i = 0; i < 3; i++) {
        const socket = connect(Number(url.port), url.hostname);
        await new Promise((resolve) => socket.once('connect', resolve));
        socket.write(`POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nx-slow: 1\r\n${sessionHeaders}content-length: ${body.length}\r\n\r\n${body}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
        socket.destroy();
      }
      await new Promise((resolve) => setTimeout(resolve, 600)); // every slow hook has settled
      for (const id of [10, 11]) {
        const again = await post(gateway.url, body.replace('9', String(id)), headers);
        assert.equal(again.status, 200, again.text);
      }
    });
  });
}

/**
 * A backend that speaks just enough MCP to be aggregated, and whose session GET stream sends
 * notifications as fast as the gateway reads them (it waits for 'drain', as a good server does).
 */
async function startFloodBackend(): Promise<{ url: string; sent: () => number; close: () => Promise<void> }> {
  let sent = 0;
  const streams = new Set<ServerResponse>();
  const note = `data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'z'.repeat(8 * 1024) } })}\n\n`;
  const server: Server = createServer((req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      streams.add(res);
      const pump = (): void => {
        while (!res.destroyed) {
          sent += note.length;
          if (!res.write(note)) return void res.once('drain', pump);
        }
      };
      res.on('close', () => streams.delete(res));
      pump();
      return;
    }
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const message = JSON.parse(text) as { id?: number; method: string };
      if (message.id === undefined) return void res.writeHead(202).end();
      const result =
        message.method === 'initialize'
          ? { protocolVersion: '2025-11-25', capabilities: { tools: {}, logging: {} }, serverInfo: { name: 'flood', version: '1' } }
          : message.method === 'tools/list'
            ? { tools: [{ name: 'noop', inputSchema: { type: 'object' } }] }
            : { content: [{ type: 'text', text: 'noop' }] };
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (message.method === 'initialize') headers['mcp-session-id'] = randomUUID();
      res.writeHead(200, headers).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    sent: () => sent,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of streams) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('aggregated mode: a GET stream whose client stops reading', () => {
  let flood: Awaited<ReturnType<typeof startFloodBackend>>;
  let alpha: SdkServer;
  let gateway: RunningVmcp;

  before(async () => {
    flood = await startFloodBackend();
    alpha = await startSdkServer({ name: 'alpha' });
    gateway = await startTestGateway({
      backends: [
        { name: 'flood', url: flood.url },
        { name: 'alpha', url: alpha.url },
      ],
      spec: '  server: {maxStreamBuffer: 1Mi}',
    });
  });
  after(async () => {
    await gateway.stop();
    await flood.close();
    await alpha.close();
  });

  it('is dropped at server.maxStreamBuffer, the memory stays bounded, and the session keeps working', async () => {
    const headers = await session(gateway.url);
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    const { port } = new URL(gateway.url);
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(
      `GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\nMcp-Session-Id: ${headers['mcp-session-id']}\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n`,
    );
    socket.pause(); // the client reads nothing more
    const deadline = Date.now() + 20_000;
    while ((await metric(gateway, /gatehouse_limit_refusals_total\{limit="stream_buffer"\} (\d+)/)) === 0) {
      assert.ok(Date.now() < deadline, `the stream was not dropped (the backend had sent ${flood.sent()} bytes)`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const grown = process.memoryUsage().rss - rssBefore;
    // The kernels' socket buffers hold some, the gateway at most the limit and one event more.
    assert.ok(grown < 64 * 1024 * 1024, `RSS grew by ${(grown / 1048576).toFixed(1)} MiB while the stream was flooded`);
    // The client sees the end once it reads again (a paused socket does not notice a close).
    socket.resume();
    await closed;
    // The session outlives its stream.
    const answer = await post(gateway.url, call(7, 'alpha_echo', { text: 'still here' }), headers);
    assert.equal(answer.status, 200, answer.text);
    assert.match(answer.text, /still here/);
    socket.destroy();
  });
});

describe('server limits in the config', () => {
  it('refuses values that are not limits, naming each YAML path', async () => {
    const file = await writeConfig(
      vmcpYaml({
        backends: [{ name: 'alpha', url: 'http://127.0.0.1:9/mcp' }],
        spec: '  server: {maxConnections: -1, maxPipelinedRequests: 0, maxSessionRequests: 1.5, maxStreamBuffer: lots, sendTimeout: soon}',
      }),
    );
    await assert.rejects(loadVmcpConfig(file), (err: Error) => {
      for (const path of ['spec.server.maxConnections', 'spec.server.maxPipelinedRequests', 'spec.server.maxSessionRequests', 'spec.server.maxStreamBuffer', 'spec.server.sendTimeout']) {
        assert.ok(err.message.includes(path), `${path} is not named in: ${err.message}`);
      }
      return true;
    });
  });

  it('defaults to 10,000 connections, 16 pipelined and 64 session requests, 4 MiB per stream, 60 s send timeout', async () => {
    const file = await writeConfig(vmcpYaml({ backends: [{ name: 'alpha', url: 'http://127.0.0.1:9/mcp' }] }));
    const config = await loadVmcpConfig(file);
    assert.deepEqual(config.server.limits, { maxConnections: 10_000, maxPipelinedRequests: 16, maxSessionRequests: 64, maxStreamBuffer: 4 * 1024 * 1024, sendTimeoutMs: 60_000 });
  });
});

describe('server.maxSessionRequests is counted per principal', () => {
  let issuer: KeyIssuer;
  let alpha: SdkServer;
  let beta: SdkServer;
  let gateway: RunningVmcp;
  let resource: string;

  before(async () => {
    issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
    alpha = await startSdkServer({ name: 'alpha' });
    beta = await startSdkServer({ name: 'beta' });
    const port = await freePort();
    resource = `http://127.0.0.1:${port}/mcp`;
    gateway = await startTestGateway({
      port,
      backends: [{ name: 'alpha', url: alpha.url }, { name: 'beta', url: beta.url }],
      incomingAuth: inlineOidcYaml({ issuer: issuer.url, audience: resource, resourceUrl: resource }),
      spec: '  server: {maxSessionRequests: 2, requestTimeout: 10s}',
    });
  });
  after(async () => {
    await gateway.stop();
    await Promise.all([alpha.close(), beta.close(), issuer.close()]);
  });

  it("another principal holding requests open with the session's id does not use up its count", async () => {
    const owner = await issuer.mint(issuer.claims(resource));
    const other = await issuer.mint(issuer.claims(resource, { sub: 'user-2' }));
    const auth = (token: string) => ({ authorization: `Bearer ${token}` });
    const init = await post(resource, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }), auth(owner));
    const session = init.headers.get('mcp-session-id')!;
    const headers = { ...auth(owner), 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    await post(resource, '{"jsonrpc":"2.0","method":"notifications/initialized"}', headers);
    // Two requests of the other principal with the owner's session id, their bodies trickling.
    const { port } = new URL(resource);
    const stalled = [0, 1].map(() => {
      const socket = connect(Number(port), '127.0.0.1');
      socket.on('error', () => undefined);
      socket.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nAuthorization: Bearer ${other}\r\nMcp-Session-Id: ${session}\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: 100\r\n\r\n{"jsonrpc"`);
      return socket;
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const answer = await post(resource, call(2, 'alpha_echo', { text: 'mine' }), headers);
      assert.equal(answer.status, 200, answer.text);
      assert.match(answer.text, /mine/);
    } finally {
      for (const socket of stalled) socket.destroy();
    }
  });
});
