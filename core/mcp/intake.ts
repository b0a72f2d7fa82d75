/**
 * What every POST to the MCP endpoint goes through before it is routed, in this order:
 *   1. the media type and the declared length (before reading anything),
 *   2. the body (capped),
 *   3. JSON-RPC framing,
 *   4. the 2026-07-28 standard headers agreeing with the body, and the request's era
 *      (request-era.ts: a modern request's envelope, checked),
 *   5. the onMessage hooks.
 * Each step answers with its own clear error. Steps 1–4 are synchronous and throw.
 * `directTarget` is ctx.target of a message sent to one backend as it is (transparent mode).
 */
import type { Chain, HookOutcome } from '../server/chain.ts';
import { runHooks } from '../server/chain.ts';
import type { Context, MessageTarget } from '../plugin-api/context.ts';
import { GatewayError } from '../base/errors.ts';
import { declaredLengthProblem } from '../http/body.ts';
import { messageProblem, parseMessages, type JsonRpcMessage, type JsonRpcRequest } from '../protocol/jsonrpc.ts';
import { knownEnvelopes } from '../protocol/envelope-tails.ts';
import { subjectOf } from '../protocol/methods.ts';
import { standardHeadersProblem } from '../protocol/standard-headers.ts';
import { modernEnvelope } from './request-era.ts';

function isJsonMediaType(value: string | undefined): boolean {
  if (value === undefined) return false;
  if (value === 'application/json') return true; // as nearly every client sends it
  const semi = value.indexOf(';');
  const type = (semi === -1 ? value : value.slice(0, semi)).trim().toLowerCase();
  return type === 'application/json';
}

/** Step 1. */
export function checkPostHead(ctx: Context, maxBodyBytes: number): void {
  if (!isJsonMediaType(ctx.head.contentType)) {
    throw new GatewayError('unsupported_media_type', 'Content-Type must be application/json');
  }
  const problem = declaredLengthProblem(ctx.head.contentLength, maxBodyBytes);
  if (problem !== null) throw problem;
}

/** Steps 3–4: the request's messages land on `ctx.message` / `ctx.rpcMethod` / `ctx.rpcId`. */
export function acceptMessages(ctx: Context, body: Buffer): void {
  ctx.body = body;
  // A modern request ending with an envelope seen before is read without re-reading it (envelope-tails.ts).
  const enveloped = knownEnvelopes.parse(body);
  let message: JsonRpcMessage | JsonRpcMessage[];
  if (enveloped !== null && messageProblem(enveloped.message) === null) {
    message = enveloped.message as JsonRpcMessage;
    ctx.envelopeAt = enveloped.at;
    ctx.capabilitiesJson = enveloped.capabilitiesJson;
  } else {
    message = parseMessages(body);
  }
  ctx.message = message;
  if (!Array.isArray(message) && 'method' in message) {
    ctx.rpcMethod = message.method;
    if ('id' in message) ctx.rpcId = message.id;
  }
  // Checked here, forwarded to a backend as they came: so each is there once (a proxy after the
  // gateway, or the backend, could read the copy that was not checked).
  if (ctx.head.mcpRepeated) throw new GatewayError('header_mismatch', 'Header mismatch: Mcp-Method, Mcp-Name and MCP-Protocol-Version may each be sent once');
  const mismatch = standardHeadersProblem(message, ctx.head.mcpMethod, ctx.head.mcpName);
  if (mismatch !== null) throw mismatch;
  ctx.envelope = modernEnvelope(ctx.head, message);
  if (ctx.envelope !== null && ctx.envelopeAt === -1) knownEnvelopes.learn(message as JsonRpcRequest, body);
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

/**
 * The target of a message the one backend gets as the client sent it: the tool or prompt name,
 * or the resource URI, it is about (methods.ts); null for a response or a batch.
 */
export function directTarget(backend: string, message: JsonRpcMessage | JsonRpcMessage[] | null): MessageTarget | null {
  if (message === null || Array.isArray(message) || !('method' in message)) return null;
  return { backend, name: subjectOf(message)?.name ?? null };
}
