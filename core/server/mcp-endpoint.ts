/**
 * The MCP endpoint contract: what the server calls for requests to the MCP path, after the
 * origin guard and the authenticate / authorize phases. Transparent (one backend) and
 * aggregated (a group) modes both implement it.
 */
import type { HookOutcome } from './chain.ts';
import type { Context } from '../plugin-api/context.ts';
import { GatewayError } from '../base/errors.ts';
import { isModernVersion } from '../protocol/era.ts';

export interface McpEndpoint {
  readonly path: string;
  handle(ctx: Context): HookOutcome | Promise<HookOutcome>;
  /** Ends what the endpoint holds open (streams, sessions) at shutdown. */
  close(): Promise<void>;
  /** The `/status` document: backends, health, tool counts. */
  status(): unknown;
}

/**
 * GET and DELETE from a modern (2026-07-28) client: the revision has no GET stream and no
 * session to end (`subscriptions/listen` replaces the one), so the endpoint answers 405.
 */
export function modernMethodNotAllowed(ctx: Context): GatewayError | null {
  if (!isModernVersion(ctx.head.protocolVersion)) return null;
  return new GatewayError('method_not_allowed', `method ${ctx.req.method} is not part of the ${ctx.head.protocolVersion} protocol: send POST requests (subscriptions/listen for notifications)`, {
    headers: { allow: 'POST' },
  });
}

/** The answer to any other method on the MCP endpoint. */
export function methodNotAllowed(ctx: Context): GatewayError {
  return new GatewayError('method_not_allowed', `method ${ctx.req.method} is not allowed on the MCP endpoint`, {
    headers: { allow: 'GET, POST, DELETE, OPTIONS' },
  });
}
