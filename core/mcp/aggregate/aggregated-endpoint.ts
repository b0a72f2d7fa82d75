/**
 * Aggregated mode: one MCP endpoint in front of a group of backends. The gateway owns the
 * client's session (its own random Mcp-Session-Id) and holds one session per backend.
 *
 *   POST    read and checked (intake.ts), then the request's steps (pipeline.ts): session,
 *           resolve, hooks, dispatch, answer
 *   GET     the session's multiplexed stream, or a routed request's stream resumed (session-streams.ts)
 *   DELETE  every backend session ends (sessions.ts)
 *
 * Backends that restart, go down or come back are healed into the session (healing.ts).
 */
import type { HookOutcome } from '../../server/chain.ts';
import type { Context } from '../../plugin-api/context.ts';
import type { GatewayError } from '../../base/errors.ts';
import { discardBody, startReading, type BodySink } from '../../http/body.ts';
import { acceptMessages, checkPostHead } from '../intake.ts';
import { methodNotAllowed, type McpEndpoint } from '../../server/mcp-endpoint.ts';
import { BackendGroup, type GroupOptions, type SessionEnder, type ShownCarrier } from './group.ts';
import type { ShownLists } from './shown-lists.ts';
import type { SessionRecord } from './session-store.ts';

export interface AggregatedOptions extends GroupOptions {
  path: string;
  maxBodyBytes: number;
}

export class AggregatedEndpoint implements McpEndpoint, BodySink<Context>, SessionEnder, ShownCarrier {
  readonly path: string;
  readonly #group: BackendGroup;
  readonly #maxBodyBytes: number;

  constructor(options: AggregatedOptions) {
    this.path = options.path;
    this.#maxBodyBytes = options.maxBodyBytes;
    this.#group = new BackendGroup(options);
  }

  handle(ctx: Context): HookOutcome | Promise<HookOutcome> {
    switch (ctx.req.method) {
      case 'POST':
        checkPostHead(ctx, this.#maxBodyBytes);
        startReading(ctx.req, this.#maxBodyBytes, this, ctx);
        return undefined;
      case 'GET':
      case 'DELETE':
        // A body sent with them is not read: it is dropped as it arrives.
        if (ctx.head.hasBody) discardBody(ctx.req, this.#maxBodyBytes);
        return this.#group.streamOrEnd(ctx);
      default:
        throw methodNotAllowed(ctx);
    }
  }

  body(ctx: Context, body: Buffer): void {
    try {
      acceptMessages(ctx, body);
    } catch (err) {
      ctx.fail(err);
      return;
    }
    this.#group.pipeline.serve(ctx);
  }

  bodyFailed(ctx: Context, error: GatewayError): void {
    ctx.fail(error);
  }

  endBackends(ctx: Context | null, record: SessionRecord): Promise<void> {
    return this.#group.endBackends(ctx, record);
  }

  async close(): Promise<void> {
    this.#group.close();
  }

  status(): unknown {
    return this.#group.status('aggregated');
  }

  shownLists(): Map<string, ShownLists> {
    return this.#group.shownLists();
  }

  carryShown(shown: Map<string, ShownLists>): void {
    this.#group.carryShown(shown);
  }
}
