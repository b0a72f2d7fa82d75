/**
 * The last step of an aggregated request: a response the gateway built itself (a merged list,
 * its own methods, an error of a request it could not route) goes through the onResponse hooks
 * of its method, then out in the shape the client's generation of MCP wants. Routed answers take
 * the same hooks in routed.ts, as they stream.
 */
import { runResponseHooks, type Chain, type HookOutcome } from '../../server/chain.ts';
import type { Context } from '../../plugin-api/context.ts';
import { Reply } from '../../plugin-api/reply.ts';
import { isPromise } from '../../base/thenable.ts';
import type { JsonRpcId, JsonRpcResponse } from '../../protocol/jsonrpc.ts';
import { completed } from './modern-answers.ts';
import { noteRpcError } from '../../server/request-observation.ts';

/** JSON-RPC error codes the gateway answers with itself. */
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
export const RESOURCE_NOT_FOUND = -32002;

/** A response built here, through the method's onResponse hooks, as the client gets it. */
export function answer(ctx: Context, chain: Chain, response: JsonRpcResponse, headers?: Record<string, string>): HookOutcome | Promise<HookOutcome> {
  const hooks = chain.responseHooks(ctx.rpcMethod);
  if (hooks === null) return reply(ctx, response, headers);
  const hooked = runResponseHooks(hooks, ctx, response);
  return isPromise(hooked) ? hooked.then((settled) => reply(ctx, settled, headers)) : reply(ctx, hooked, headers);
}

/** A JSON-RPC error the gateway answers request `id` with, through the hooks as any answer. */
export function answerError(ctx: Context, chain: Chain, id: JsonRpcId, code: number, message: string, data?: Record<string, unknown>): HookOutcome | Promise<HookOutcome> {
  noteRpcError(ctx, code, data);
  return answer(ctx, chain, { jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } });
}

/**
 * A response as the client's era wants it, after the hooks (which see one shape in both eras):
 * to a modern client every result says it is complete, and an unknown method is a 404.
 */
function reply(ctx: Context, response: JsonRpcResponse, headers?: Record<string, string>): Reply {
  if (ctx.envelope === null) return Reply.json(200, response, headers);
  return Reply.json(response.error?.code === METHOD_NOT_FOUND ? 404 : 200, completed(response), headers);
}
