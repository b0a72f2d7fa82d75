/**
 * onResponse hooks cannot be skipped by resuming a stream. A response replayed on a GET stream
 * (Last-Event-ID) does not say which request, so which method's hooks, it answers: in transparent
 * mode such a response is dropped while hooks are configured (the rest of the stream passes); in
 * aggregated mode the resumption of a routed stream is refused (hostile-backend.test.ts).
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Plugin } from '../../core/plugin-api/plugin.ts';
import { startTestGateway } from '../helpers/gateway.ts';

describe('transparent mode: a resumed stream with onResponse hooks configured', () => {
  let backend: Server;
  let url: string;
  /** Answers any GET with a replay: a notification, then the response to request 5 carrying SECRET. */
  before(async () => {
    backend = createServer((req, res) => {
      if (req.method !== 'GET') return void res.writeHead(405).end();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`id: e1\nevent: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'progressing' } })}\n\n`);
      res.end(`id: e2\nevent: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 5, result: { content: [{ type: 'text', text: 'SECRET' }] } })}\n\n`);
    });
    await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(backend.address() as AddressInfo).port}/mcp`;
  });
  after(() => new Promise<void>((resolve) => backend.close(() => resolve())));

  const redact: Plugin = {
    name: 'redact',
    onResponse: { methods: ['tools/call'], handle: (_ctx, response) => (JSON.stringify(response).includes('SECRET') ? { jsonrpc: '2.0', id: response.id, error: { code: -32603, message: 'redacted' } } : undefined) },
  };

  async function replay(plugins: Plugin[]): Promise<string> {
    const gateway = await startTestGateway({
      backends: [{ name: 'only', url }],
      plugins: plugins.map((plugin) => ({ definition: { name: plugin.name, create: () => plugin }, config: {}, source: 'code' })),
    });
    try {
      const res = await fetch(gateway.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': 's1', 'last-event-id': 'e0', 'accept-encoding': 'gzip' } });
      assert.equal(res.status, 200);
      return await res.text();
    } finally {
      await gateway.stop();
    }
  }

  it('the replayed response is dropped, the rest of the stream passes', async () => {
    const text = await replay([redact]);
    assert.match(text, /progressing/);
    assert.doesNotMatch(text, /SECRET/);
  });

  it('without hooks the stream is relayed as the backend sent it', async () => {
    assert.match(await replay([]), /SECRET/);
  });
});
