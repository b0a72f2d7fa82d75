/**
 * What every POST to the MCP endpoint goes through before it is routed, in this order: the
 * media type, the body (capped), JSON-RPC framing, the standard headers agreeing with the body,
 * and the onMessage hooks. Each step answers with its own clear error.
 */
import type { Chain, HookOutcome } from '../chain.ts';
import { runHooks } from '../chain.ts';
import type { Context } from '../context.ts';
import { GatewayError } from '../errors.ts';
import { readBody } from '../http/body.ts';
import { parseMessages, standardHeadersProblem, type JsonRpcMessage } from './jsonrpc.ts';

function isJsonMediaType(value: string | undefined): boolean {
  if (value === undefined) return false;
  const semi = value.indexOf(';');
  const type = (semi === -1 ? value : value.slice(0, semi)).trim().toLowerCase();
  return type === 'application/json';
}

/** Steps 1–4: the request's messages land on `ctx.message` / `ctx.rpcMethod` / `ctx.rpcId`. */
export async function receiveMessages(ctx: Context, maxBodyBytes: number): Promise<void> {
  if (!isJsonMediaType(ctx.req.headers['content-type'])) {
    throw new GatewayError('unsupported_media_type', 'Content-Type must be application/json');
  }
  const body = await readBody(ctx.req, maxBodyBytes);
  ctx.body = body;
  const message = parseMessages(body);
  ctx.message = message;
  if (!Array.isArray(message) && 'method' in message) {
    ctx.rpcMethod = message.method;
    if ('id' in message) ctx.rpcId = message.id;
  }
  const mismatch = standardHeadersProblem(message, ctx.header('mcp-method'), ctx.header('mcp-name'));
  if (mismatch !== null) throw mismatch;
}

/** Step 5: the onMessage hooks of each message, stopping at the first answer. */
export function runMessageHooks(ctx: Context, chain: Chain): HookOutcome | Promise<HookOutcome> {
  const message = ctx.message!;
  if (!Array.isArray(message)) {
    const hooks = chain.messageHooks('method' in message ? message.method : null);
    return hooks === null ? undefined : runHooks(hooks, ctx, message);
  }
  return runBatchHooks(ctx, chain, message);
}

async function runBatchHooks(ctx: Context, chain: Chain, batch: JsonRpcMessage[]): Promise<HookOutcome> {
  for (const message of batch) {
    const hooks = chain.messageHooks('method' in message ? message.method : null);
    if (hooks === null) continue;
    const outcome = await runHooks(hooks, ctx, message);
    if (outcome !== undefined) return outcome;
  }
  return undefined;
}
