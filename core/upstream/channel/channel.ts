/**
 * A backend reached by exchanging JSON-RPC messages over one channel: a child process's
 * stdin/stdout (stdio/), or a legacy HTTP+SSE connection (sse/). A channel is one MCP session of
 * the backend; `ChannelTransport` (channel-transport.ts) serves the gateway's exchanges from it as
 * a streamable-HTTP server would.
 */
import type { JsonRpcMessage } from '../../protocol/jsonrpc.ts';
import { UpstreamError } from '../upstream-error.ts';

/**
 * Why a channel ended, worded to follow `backend "<name>" `: "exited with status 1", "was killed
 * by SIGKILL", "was ended: it wrote a line longer than 32 MiB to stdout", "could not be started
 * (spawn npx ENOENT)", "closed its event stream". The calls it leaves unanswered fail with it.
 */
export class ChannelClosed extends UpstreamError {
  constructor(reason: string, cause?: unknown) {
    super('ECHANNEL_CLOSED', reason, cause);
    this.name = 'ChannelClosed';
  }
}

/** What a channel reports. Neither is called after `closed`, and neither from inside `send`. */
export interface ChannelEvents {
  /** One JSON-RPC message the backend sent (a batch is delivered message by message). */
  message(message: JsonRpcMessage): void;
  /** The channel ended (the child exited, the stream closed, it could not be opened): called once. */
  closed(error: ChannelClosed): void;
}

export interface MessageChannel {
  /**
   * Sends one serialized JSON-RPC message (no line break inside). Messages sent before the
   * channel is open (a child still spawning, an SSE stream that has not announced its endpoint)
   * are queued, bounded. Returns null when sent or queued, else why not (the channel is closed,
   * or the backend does not read what it is sent and its bound is reached). `headers` are the
   * request headers of the exchange that carries the message (outgoing credentials, Via,
   * passthrough headers; never Mcp-Session-Id, Accept, Content-Type or Last-Event-ID), as
   * [name, value, ...]: a channel over HTTP sends them along; a child process ignores them.
   */
  send(text: string, headers: readonly string[]): UpstreamError | null;
  /**
   * Ends the channel (a child: SIGTERM to its process group, SIGKILL after the grace period);
   * resolves once it is gone. `closed` is still reported.
   */
  close(): Promise<void>;
}

/**
 * Opens a new channel to one backend (a child started, an SSE stream opened). `headers` are
 * those of the exchange that opens it, as for `send`: an SSE stream is opened with them.
 */
export type ChannelOpener = (events: ChannelEvents, headers: readonly string[]) => MessageChannel;
