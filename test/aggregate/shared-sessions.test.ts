/**
 * Two gateway processes sharing the real Redis (127.0.0.1:6379): a session created through one
 * is served by the other, which rebuilds what it needs (lists, routing) from the stored backend
 * sessions. Skipped with a reason when Redis does not answer — except under CI=true.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { connectClient } from '../fixtures/client.ts';
import { REPO_ROOT } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { post, startTestGateway } from '../helpers/gateway.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';
import type { RunningVmcp } from '../../core/vmcp.ts';

function textOf(result: unknown): string {
  const first = (result as CallToolResult).content[0];
  return first !== undefined && first.type === 'text' ? first.text : '';
}

/** `gatehouse vmcp serve` as a second OS process, on a free port. */
async function serveProcess(config: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [`${REPO_ROOT}core/bin.mjs`, 'vmcp', 'serve', '--config', config, '--port', '0', '--log-level', 'info'], { cwd: REPO_ROOT });
  const exited = once(child, 'close');
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const entry = JSON.parse(line) as { msg?: string; url?: string };
      if (entry.msg === 'virtual MCP server listening') resolve(entry.url!);
    });
    exited.then(([code]) => reject(new Error(`second gateway exited with ${String(code)}`)));
  });
  return { child, url };
}

describe('aggregated sessions shared through Redis', () => {
  let redis: LocalRedis | null = null;
  let skip: string | null = null;
  let alpha: SdkServer;
  let beta: SdkServer;
  let first: RunningVmcp;
  let second: { child: ChildProcess; url: string };

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
    second = await serveProcess((first as RunningVmcp & { file: string }).file);
  });
  after(async () => {
    if (redis === null) return;
    second.child.kill('SIGTERM');
    await once(second.child, 'close');
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

    // What the store holds: the backend sessions, nothing secret, under the configured prefix.
    const keys = await redis!.admin.keys(`${redis!.keyPrefix}*`);
    assert.deepEqual(keys, [`${redis!.keyPrefix}vmcp:session:${sessionId}`]);
    const stored = JSON.parse((await redis!.admin.get(keys[0]!))!) as { backends: Record<string, { sessionId: string }> };
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
    assert.deepEqual(await redis!.admin.keys(`${redis!.keyPrefix}*`), []);
    await a.close({ terminate: false });
  });
});
