/**
 * Example plugin: a tool allow-list.
 *
 * - A `tools/call` for a tool that is not on the list is answered by the gateway with a JSON-RPC
 *   error and never reaches a backend.
 * - `tools/list` responses are filtered, so clients do not even see the other tools.
 *
 * Names are the ones clients see, in both modes: `echo` in front of one backend, `demo_echo` in
 * an aggregated group with the default prefixes (the quickstart). A plugin that wants the
 * backend's own name reads `ctx.target` (`{backend: 'demo', name: 'echo'}`).
 *
 * Load it from the config:
 *
 *   spec:
 *     plugins:
 *       - name: tool-allowlist
 *         module: ../plugins/tool-allowlist.ts     # relative to the config file
 *         config: {allow: [demo_echo, docs_add]}
 *
 * or from code: `startVmcp({config, plugins: [{definition: toolAllowlist, config: {allow: ['echo']}, source: 'code'}]})`.
 */
import { Reply, definePlugin, isRequest, z, type JsonRpcResponse } from '@gatehouse-mcp/gateway';

const Config = z.strictObject({
  /** Tool names clients may list and call. */
  allow: z.array(z.string().min(1)).min(1),
});

/** JSON-RPC "invalid params": the code MCP uses for an unknown tool. */
const INVALID_PARAMS = -32602;

export default definePlugin({
  name: 'tool-allowlist',
  config: Config,
  create(config) {
    const allowed = new Set(config.allow);
    return {
      name: 'tool-allowlist',

      onMessage: {
        methods: ['tools/call'],
        handle(ctx, message) {
          if (!isRequest(message)) return undefined;
          const name = message.params?.name;
          if (typeof name === 'string' && allowed.has(name)) return undefined;
          return Reply.rpcError(message.id, INVALID_PARAMS, `tool "${String(name)}" is not allowed by the gateway's tool allow-list`);
        },
      },

      onResponse: {
        methods: ['tools/list'],
        handle(_ctx, response): JsonRpcResponse | undefined {
          const result = response.result as { tools?: { name: string }[] } | undefined;
          if (result?.tools === undefined) return undefined;
          return { ...response, result: { ...result, tools: result.tools.filter((tool) => allowed.has(tool.name)) } };
        },
      },
    };
  },
});
