/**
 * The example allow-list plugin's hooks (examples/plugins/tool-allowlist.ts), one call each, as
 * the plugin guide (plugins/README.md) shows a plugin author to measure their own: the plugin made
 * through its definition with a parsed config, its hooks called with the messages they see on
 * the hot path. `gatehouse bench --config examples/plugins/vmcp-with-allowlist.yaml` measures the
 * whole path around them (and gatehouse_plugin_phase_seconds the same hooks inside a gateway).
 */
import type { Bench } from 'tinybench';
import type { Context } from '../../../core/plugin-api/context.ts';
import type { JsonRpcRequest, JsonRpcResponse } from '../../../core/protocol/jsonrpc.ts';
import type { MethodHook, PluginHost, ResponseHook, MessageHook } from '../../../core/plugin-api/plugin.ts';
import toolAllowlist from '../../../examples/plugins/tool-allowlist.ts';

/** Results go to an exported sink so the engine cannot drop the work as dead code. */
export let sink: unknown;

export default async function register(bench: Bench): Promise<void> {
  const config = toolAllowlist.config!.parse({ allow: ['demo_echo', 'docs_add'] });
  // The allow-list reads nothing of its host; a plugin that does gets the fields it reads.
  const plugin = await toolAllowlist.create(config, {} as PluginHost);
  const onMessage = (plugin.onMessage as MethodHook<MessageHook>).handle;
  const onResponse = (plugin.onResponse as MethodHook<ResponseHook>).handle;
  const ctx = {} as Context;
  const call = (name: string): JsonRpcRequest => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: { text: 'hi' } } });
  const allowed = call('demo_echo');
  const refused = call('demo_delete');
  const list: JsonRpcResponse = {
    jsonrpc: '2.0',
    id: 2,
    result: { tools: Array.from({ length: 50 }, (_, i) => ({ name: i === 7 ? 'demo_echo' : `demo_tool_${i}`, inputSchema: { type: 'object' } })) },
  };
  if (onMessage(ctx, allowed) !== undefined || onMessage(ctx, refused) === undefined) throw new Error('the allow-list does not decide as expected');

  bench
    .add('onMessage, tools/call of an allowed tool (continues)', () => {
      sink = onMessage(ctx, allowed);
    })
    .add('onMessage, tools/call of another tool (JSON-RPC error reply)', () => {
      sink = onMessage(ctx, refused);
    })
    .add('onResponse, tools/list of 50 tools filtered to 1', () => {
      sink = onResponse(ctx, list);
    });
}
