/**
 * The MCP endpoint contract: what the server calls for requests to the MCP path, after the
 * origin guard and the authenticate / authorize phases. Transparent (one backend) and
 * aggregated (a group) modes both implement it.
 */
import type { HookOutcome } from '../chain.ts';
import type { Context } from '../context.ts';

export interface McpEndpoint {
  readonly path: string;
  handle(ctx: Context): HookOutcome | Promise<HookOutcome>;
  /** Ends what the endpoint holds open (streams, sessions) at shutdown. */
  close(): Promise<void>;
  /** The `/status` document: backends, health, tool counts. */
  status(): unknown;
}
