/**
 * Requests for input across eras when the client's requests land on different replicas (two
 * gateways sharing Redis behind a round-robin proxy): a modern client's retry of a call parked
 * on one replica reaches the other (asked on the call's stream, or on the session stream of a
 * backend in JSON response mode), and a legacy client's answer to a request for input held by
 * one replica is posted to the other. Both still complete. Skipped with a reason when Redis does
 * not answer, except under CI=true.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import httpProxy from 'http-proxy';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { connectClient } from '../fixtures/client.ts';
import { freePort } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startSdk2Server, type Sdk2Server } from '../fixtures/sdk2-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';
import { skipIf, type Skip } from '../store/helpers/service.ts';

/** What the balancer saw of each POST: its JSON-RPC method (or "answer"), whether it retried, and which replica got it. */
interface Routed {
  readonly what: string;
  readonly retry: boolean;
  readonly replica: number;
}

describe('eras across replicas: requests for input answered through the other replica', () => {
  let redis: LocalRedis | Skip;
  let legacy: SdkServer;
  /** A legacy backend in JSON response mode: it asks on its session's stream, which the replica of the call holds. */
  let json: SdkServer;
  let modern: Sdk2Server;
  const replicas: RunningVmcp[] = [];
  let balancer: Server;
  let url: string;
  const routed: Routed[] = [];

  before(async () => {
    redis = await openLocalRedis();
    if ('skip' in redis) return;
    legacy = await startSdkServer({ name: 'l', tools: ['echo', 'elicit'] });
    json = await startSdkServer({ name: 'j', tools: ['elicit'], jsonResponse: true });
    modern = await startSdk2Server({ name: 'm', posture: 'modern' });
    const port = await freePort();
    url = `http://127.0.0.1:${port}/mcp`;
    for (let i = 0; i < 2; i++) {
      replicas.push(
        await startTestGateway({
          backends: [{ name: 'l', url: legacy.url }, { name: 'm', url: modern.url }, { name: 'j', url: json.url }],
          incomingAuth: `  incomingAuth: {type: anonymous, resourceUrl: "${url}"}`,
          config: `session: {storage: {type: redis, redis: {addr: "${redis.config.address}", keyPrefix: "${redis.keyPrefix}"}}}`,
        }),
      );
    }
    const proxy = httpProxy.createProxyServer({ xfwd: false });
    let next = 0;
    balancer = createServer((req, res) => {
      const replica = next++ % 2;
      if (req.method === 'POST') {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = Buffer.concat(chunks);
          const message = JSON.parse(body.toString('utf8') || '{}') as { method?: string; params?: { requestState?: unknown } };
          routed.push({ what: message.method ?? 'answer', retry: message.params?.requestState !== undefined, replica });
          proxy.web(req, res, { target: new URL(replicas[replica]!.url).origin, buffer: Readable.from([body]) }, () => res.writeHead(502).end());
        });
        return;
      }
      proxy.web(req, res, { target: new URL(replicas[replica]!.url).origin }, () => res.writeHead(502).end());
    });
    await new Promise<void>((resolve) => balancer.listen(port, '127.0.0.1', resolve));
  });
  after(async () => {
    if ('skip' in redis) return;
    await new Promise<void>((resolve) => balancer.close(() => resolve()));
    for (const replica of replicas) await replica.stop();
    await legacy.close();
    await json.close();
    await modern.close();
    await redis.cleanup();
  });

  it('a modern client: the retry of a call parked on one replica reaches the other, which resumes it there', async (t) => {
    if (skipIf(t, 'skip' in redis ? redis : null)) return;
    routed.length = 0;
    const client = new ModernClient({ name: 'modern', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } as never }, capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Ann' } }));
    await client.connect(new ModernTransport(new URL(url)));
    try {
      await client.listTools();
      for (let i = 0; i < 2; i++) {
        const result = await client.callTool({ name: 'l_elicit', arguments: { message: `who? ${i}` } });
        assert.deepEqual(result.structuredContent, { action: 'accept', content: { name: 'Ann' } });
      }
    } finally {
      await client.close();
    }
    const calls = routed.filter((r) => r.what === 'tools/call');
    assert.ok(calls.some((call, i) => call.retry && i > 0 && !calls[i - 1]!.retry && calls[i - 1]!.replica !== call.replica), `a retry crossed replicas: ${JSON.stringify(calls)}`);
  });

  it('a modern client: a request asked on a JSON-mode backend\'s session stream, the retry on the other replica', async (t) => {
    if (skipIf(t, 'skip' in redis ? redis : null)) return;
    routed.length = 0;
    const client = new ModernClient({ name: 'modern-json', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } as never }, capabilities: { elicitation: { form: {} }, experimental: { json: {} } } });
    client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Jo' } }));
    await client.connect(new ModernTransport(new URL(url)));
    try {
      await client.listTools();
      for (let i = 0; i < 2; i++) {
        const result = await client.callTool({ name: 'j_elicit', arguments: { message: `who? ${i}` } });
        assert.deepEqual(result.structuredContent, { action: 'accept', content: { name: 'Jo' } });
      }
    } finally {
      await client.close();
    }
    const calls = routed.filter((r) => r.what === 'tools/call');
    assert.ok(calls.some((call, i) => call.retry && i > 0 && !calls[i - 1]!.retry && calls[i - 1]!.replica !== call.replica), `a retry crossed replicas: ${JSON.stringify(calls)}`);
  });

  it('a legacy client: its answer to a modern backend\'s request for input reaches the replica that waits for it', async (t) => {
    if (skipIf(t, 'skip' in redis ? redis : null)) return;
    routed.length = 0;
    const c = await connectClient(url, { onElicitation: () => ({ action: 'accept', content: { name: 'Bo' } }), waitForStandaloneStream: false });
    try {
      for (let i = 0; i < 2; i++) {
        const result = await c.client.callTool({ name: 'm_elicit', arguments: { message: `who? ${i}` } });
        assert.deepEqual(result.structuredContent, { action: 'accept', content: { name: 'Bo' } });
      }
    } finally {
      await c.close();
    }
    const posts = routed;
    assert.ok(posts.some((p, i) => p.what === 'answer' && posts.slice(0, i).reverse().find((q) => q.what === 'tools/call')?.replica !== p.replica), `an answer crossed replicas: ${JSON.stringify(posts)}`);
  });
});
