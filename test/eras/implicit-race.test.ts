/**
 * Two gateway processes sharing Redis get a modern client's first requests at the same moment:
 * each opens the backend session of the client's implicit session (its id is the principal's and
 * the capabilities'), and only one may be kept. The first to store it wins; the other ends the
 * backend session it opened and uses the winner's, so none is left behind and both serve the
 * client on the same one. The backend's initialize is held back a moment, so that both openings
 * overlap. Skipped with a reason when Redis does not answer, except under CI=true.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import httpProxy from 'http-proxy';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { freePort } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { serveCli, type ServedCli } from '../helpers/cli.ts';
import { post, startTestGateway } from '../helpers/gateway.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';
import { skipIf, type Skip } from '../store/helpers/service.ts';

const INITIALIZE_DELAY_MS = 400;

describe('eras across replicas: a modern client\'s implicit session opened by two replicas at once', () => {
  let redis: LocalRedis | Skip;
  let legacy: SdkServer;
  let slow: Server;
  let first: RunningVmcp & { file: string };
  let second: ServedCli;

  before(async () => {
    redis = await openLocalRedis();
    if ('skip' in redis) return;
    legacy = await startSdkServer({ name: 'l', tools: ['echo'] });
    // The backend as the gateways reach it: its initialize answers late, everything else at once.
    const proxy = httpProxy.createProxyServer({ xfwd: false });
    slow = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const forward = () => proxy.web(req, res, { target: new URL(legacy.url).origin, buffer: Readable.from([body]) }, () => res.writeHead(502).end());
        if (body.includes('"method":"initialize"')) setTimeout(forward, INITIALIZE_DELAY_MS);
        else forward();
      });
    });
    const port = await freePort();
    await new Promise<void>((resolve) => slow.listen(port, '127.0.0.1', resolve));
    first = await startTestGateway({
      backends: [{ name: 'l', url: `http://127.0.0.1:${port}/mcp` }],
      config: `session: {storage: {type: redis, redis: {addr: "${redis.config.address}", keyPrefix: "${redis.keyPrefix}"}}}, operational: {failureHandling: {healthCheckInterval: 0s}}`,
    });
    // The same configuration in a process of its own.
    second = await serveCli('vmcp', first.file, ['--log-level', 'info']);
  });
  after(async () => {
    if ('skip' in redis) return;
    await second.stop();
    await first.stop();
    await new Promise<void>((resolve) => slow.close(() => resolve()));
    await legacy.close();
    await redis.cleanup();
  });

  it('one backend session is kept, the other is ended, and both replicas serve the client on the one kept', async (t) => {
    if (skipIf(t, 'skip' in redis ? redis : null) || 'skip' in redis) return;
    const call = (id: number) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: {
          name: 'echo',
          arguments: { text: `call ${id}` },
          _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { experimental: { race: {} } }, 'io.modelcontextprotocol/clientInfo': { name: 'racer', version: '1' } },
        },
      });
    const headers = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo' };
    const before = new Set(legacy.sessionIds());
    const deletesBefore = legacy.received.filter((r) => r.method === 'DELETE').length;

    const answers = await Promise.all([post(first.url, call(1), headers), post(second.url, call(2), headers)]);
    for (const [i, answer] of answers.entries()) {
      assert.equal(answer.status, 200, answer.text);
      assert.match(answer.text, new RegExp(`l: call ${i + 1}`));
    }
    const initializes = legacy.received.filter((r) => r.rpcMethods.includes('initialize') && r.text.includes('racer')).length;
    assert.equal(initializes, 2, 'both replicas opened a backend session (the race happened)');

    for (let i = 0; i < 50 && legacy.received.filter((r) => r.method === 'DELETE').length === deletesBefore; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    const kept = legacy.sessionIds().filter((id) => !before.has(id));
    assert.equal(kept.length, 1, `one backend session is left for the client, not ${kept.length}`);
    const deleted = legacy.received.filter((r) => r.method === 'DELETE').slice(deletesBefore);
    assert.equal(deleted.length, 1, 'the other was ended');
    assert.notEqual(deleted[0]!.headers['mcp-session-id'], kept[0]);

    // Both replicas go on serving the client on the one kept.
    const again = await Promise.all([post(first.url, call(3), headers), post(second.url, call(4), headers)]);
    for (const answer of again) assert.equal(answer.status, 200, answer.text);
    const lastCalls = legacy.received.filter((r) => r.rpcMethods.includes('tools/call')).slice(-2);
    assert.deepEqual(lastCalls.map((r) => r.headers['mcp-session-id']), [kept[0], kept[0]]);
    const stored = await redis.admin.keys(`${redis.keyPrefix}vmcp:session:*`);
    assert.equal(stored.length, 1, 'one implicit session in the store');
  });
});
