/**
 * Two gateway processes sharing the real Redis (127.0.0.1:6379): a session created through one
 * is served by the other, which rebuilds what it needs (lists, routing) from the stored backend
 * sessions. Skipped with a reason when Redis does not answer — except under CI=true.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connectClient, textOf } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { serveCli, type ServedCli } from '../helpers/cli.ts';
import { post, startTestGateway } from '../helpers/gateway.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';

describe('aggregated sessions shared through Redis', () => {
  let redis: LocalRedis | null = null;
  let skip: string | null = null;
  let alpha: SdkServer;
  let beta: SdkServer;
  let first: RunningVmcp;
  let second: ServedCli;

  before(async () => {
    const opened = await openLocalRedis();
    if ('skip' in opened) {
      skip = opened.skip;
      return;
    }
    redis = opened;
    alpha = await startSdkServer({ name: 'alpha' });
    beta = await startSdkServer({ name: 'beta' });
    first = await startTestGateway({
      backends: [{ name: 'alpha', url: alpha.url }, { name: 'beta', url: beta.url }],
      config: `session: {storage: {type: redis, redis: {addr: "127.0.0.1:6379", keyPrefix: "${redis.keyPrefix}"}}}`,
    });
    second = await serveCli('vmcp', (first as RunningVmcp & { file: string }).file, ['--log-level', 'info']);
  });
  after(async () => {
    if (redis === null) return;
    await second.stop();
    await first.stop();
    await alpha.close();
    await beta.close();
    await redis.cleanup();
  });

  it('the second process serves a session the first one created', async (t) => {
    if (skip !== null) return t.skip(skip);
    const a = await connectClient(first.url, { capabilities: { sampling: true } });
    const sessionId = a.transport.sessionId!;
    assert.equal(textOf(await a.client.callTool({ name: 'alpha_echo', arguments: { text: 'via first' } })), 'alpha: via first');

    // What the store holds, under the configured prefix: the backend sessions (no token, no
    // secret of the client's), and the key the replicas share to seal the requestStates they issue.
    const keys = (await redis!.admin.keys(`${redis!.keyPrefix}*`)).sort();
    assert.deepEqual(keys, [`${redis!.keyPrefix}vmcp:relay-key`, `${redis!.keyPrefix}vmcp:session:${sessionId}`]);
    const stored = JSON.parse((await redis!.admin.get(keys[1]!))!) as { backends: Record<string, { sessionId: string }> };
    assert.deepEqual(Object.keys(stored.backends).sort(), ['alpha', 'beta']);
    assert.ok(alpha.sessionIds().includes(stored.backends.alpha!.sessionId));

    const b = await connectClient(second.url, { sessionId, capabilities: { sampling: true } });
    const names = (await b.client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('alpha_echo') && names.includes('beta_echo'));
    assert.equal(textOf(await b.client.callTool({ name: 'beta_echo', arguments: { text: 'via second' } })), 'beta: via second');
    assert.match(textOf(await b.client.callTool({ name: 'alpha_sample', arguments: { prompt: 'across processes' } })), /sampled: across processes/);
    assert.equal(alpha.sessions(), alpha.sessionIds().length);

    // DELETE through the second process ends the session for both.
    await b.close();
    const res = await post(first.url, '{"jsonrpc":"2.0","id":1,"method":"tools/list"}', { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' });
    assert.equal(res.status, 404);
    assert.deepEqual(await redis!.admin.keys(`${redis!.keyPrefix}*`), [`${redis!.keyPrefix}vmcp:relay-key`], 'nothing of the session is left');
    await a.close({ terminate: false });
  });
});
