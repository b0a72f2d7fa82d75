/**
 * What a plugin sees, in both modes: onMessage gets the message as the client sent it (the
 * client's names), onResponse every response the client will get for a hooked method (lists the
 * gateway merges, results it routes, errors it makes), and ctx.target says which backend a
 * message goes to under which of its own names. Real SDK client, real SDK backends (SSE and
 * JSON answers).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { MessageTarget } from '../../core/plugin-api/context.ts';
import type { JsonRpcMessage, JsonRpcResponse } from '../../core/protocol/jsonrpc.ts';
import { definePlugin } from '../../core/plugin-api/plugin.ts';
import type { PluginSpec } from '../../core/plugin-api/plugin-loader.ts';
import { connectClient, textOf } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';

interface Seen {
  phase: 'onMessage' | 'onResponse';
  method: string | null;
  name: unknown;
  target: MessageTarget | null;
  response?: JsonRpcResponse;
}

/**
 * Records what its hooks see; redacts "secret" in tool results (after an await, to exercise the
 * async path) and keeps only tools whose name ends in `_echo` or is `echo` in lists.
 */
function observer(seen: Seen[]): PluginSpec {
  const definition = definePlugin({
    name: 'observer',
    create: () => ({
      name: 'observer',
      onMessage(ctx, message: JsonRpcMessage) {
        const params = 'method' in message ? message.params : undefined;
        seen.push({ phase: 'onMessage', method: ctx.rpcMethod, name: params?.name, target: ctx.target });
        return undefined;
      },
      onResponse: {
        methods: ['tools/list', 'tools/call'],
        async handle(ctx, response) {
          seen.push({ phase: 'onResponse', method: ctx.rpcMethod, name: undefined, target: ctx.target, response });
          await new Promise((resolve) => setImmediate(resolve));
          const result = response.result as { tools?: { name: string }[]; content?: { type: string; text?: string }[] } | undefined;
          if (result?.tools !== undefined) return { ...response, result: { ...result, tools: result.tools.filter((t) => /(^|_)echo$/.test(t.name)) } };
          if (result?.content !== undefined) {
            return { ...response, result: { ...result, content: result.content.map((c) => (c.text === undefined ? c : { ...c, text: c.text.replaceAll('secret', '[redacted]') })) } };
          }
          return undefined;
        },
      },
    }),
  });
  return { definition: definition as PluginSpec['definition'], config: undefined, source: 'test observer' };
}

describe('what plugins see', () => {
  let alpha: SdkServer;
  let beta: SdkServer;
  before(async () => {
    alpha = await startSdkServer({ name: 'alpha' });
    beta = await startSdkServer({ name: 'beta', jsonResponse: true });
  });
  after(async () => {
    await alpha.close();
    await beta.close();
  });

  it('aggregated: onMessage sees the client\'s names with ctx.target the backend\'s; onResponse sees merged lists and routed results', async () => {
    const seen: Seen[] = [];
    const gateway = await startTestGateway({ backends: [{ name: 'alpha', url: alpha.url }, { name: 'beta', url: beta.url }], plugins: [observer(seen)] });
    try {
      const c = await connectClient(gateway.url);
      const names = (await c.client.listTools()).tools.map((t) => t.name).sort();
      assert.deepEqual(names, ['alpha_echo', 'beta_echo'], 'the merged list went through onResponse');
      const listed = seen.find((s) => s.phase === 'onResponse' && s.method === 'tools/list')!;
      assert.equal(listed.target, null, 'a merged list has no one backend');
      assert.ok((listed.response!.result as { tools: { name: string }[] }).tools.some((t) => t.name === 'alpha_add'), 'the hook saw the whole list, client names');

      for (const [backend, server] of [['alpha', 'SSE'], ['beta', 'JSON']] as const) {
        seen.length = 0;
        const result = await c.client.callTool({ name: `${backend}_echo`, arguments: { text: `a secret via ${server}` } });
        assert.equal(textOf(result), `${backend}: a [redacted] via ${server}`, `routed ${server} result through onResponse`);
        const message = seen.find((s) => s.phase === 'onMessage' && s.method === 'tools/call')!;
        assert.equal(message.name, `${backend}_echo`, 'onMessage sees the name the client sent');
        assert.deepEqual(message.target, { backend, name: 'echo' }, 'ctx.target is the backend and its own name');
        const response = seen.find((s) => s.phase === 'onResponse' && s.method === 'tools/call')!;
        assert.deepEqual(response.target, { backend, name: 'echo' });
      }

      // Progress before the result still streams while the async hook works on the result.
      const progress: number[] = [];
      const slow = await c.client.callTool({ name: 'alpha_slow', arguments: { steps: 3, delayMs: 10 } }, CallToolResultSchema, { onprogress: (p) => progress.push(p.progress) });
      assert.equal(textOf(slow), 'done');
      assert.deepEqual(progress, [1, 2, 3]);

      // An error the gateway makes itself goes through onResponse too.
      seen.length = 0;
      await assert.rejects(c.client.callTool({ name: 'nowhere_echo', arguments: {} }), (err: unknown) => err instanceof McpError && /Unknown tool: nowhere_echo/.test(err.message));
      const unknown = seen.find((s) => s.phase === 'onResponse' && s.method === 'tools/call')!;
      assert.equal(unknown.target, null);
      assert.match(JSON.stringify(unknown.response!.error), /Unknown tool/);
      await c.close();
    } finally {
      await gateway.stop();
    }
  });

  it('transparent: the same plugin sees the same things, with the one backend as ctx.target', async () => {
    const seen: Seen[] = [];
    const gateway = await startTestGateway({ backends: [{ name: 'alpha', url: alpha.url }], plugins: [observer(seen)] });
    try {
      const c = await connectClient(gateway.url);
      assert.deepEqual((await c.client.listTools()).tools.map((t) => t.name), ['echo']);
      assert.equal(textOf(await c.client.callTool({ name: 'echo', arguments: { text: 'a secret' } })), 'alpha: a [redacted]');
      const message = seen.find((s) => s.phase === 'onMessage' && s.method === 'tools/call')!;
      assert.equal(message.name, 'echo');
      assert.deepEqual(message.target, { backend: 'alpha', name: 'echo' });
      const listed = seen.find((s) => s.phase === 'onMessage' && s.method === 'tools/list')!;
      assert.deepEqual(listed.target, { backend: 'alpha', name: null });
      await c.close();
    } finally {
      await gateway.stop();
    }
  });

  it('a message a hook replaces is routed, and described in ctx.target, as replaced', async () => {
    const targets: (MessageTarget | null)[] = [];
    const rename = definePlugin({
      name: 'rename',
      create: () => ({
        name: 'rename',
        onMessage: {
          methods: ['tools/call'],
          handle(ctx, message) {
            if (!('id' in message) || !('method' in message) || message.params?.name !== 'echo_anywhere') return undefined;
            ctx.replaceMessage({ ...message, params: { ...message.params, name: 'beta_echo' } });
            return undefined;
          },
        },
        onResponse: {
          methods: ['tools/call'],
          handle(ctx) {
            targets.push(ctx.target);
            return undefined;
          },
        },
      }),
    });
    const gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: alpha.url }, { name: 'beta', url: beta.url }],
      plugins: [{ definition: rename as PluginSpec['definition'], config: undefined, source: 'test rename' }],
    });
    try {
      const c = await connectClient(gateway.url);
      assert.equal(textOf(await c.client.callTool({ name: 'echo_anywhere', arguments: { text: 'moved' } })), 'beta: moved');
      assert.deepEqual(targets, [{ backend: 'beta', name: 'echo' }]);
      await c.close();
    } finally {
      await gateway.stop();
    }
  });
});
