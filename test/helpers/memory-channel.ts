/**
 * A channel backend in memory, for tests of what the gateway makes of channels: an SDK
 * `McpServer` on an InMemoryTransport pair. Messages are handed over a microtask later (a real
 * channel never reports from inside `send`); `exit(reason)` ends it as a process exiting would.
 */
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { JsonRpcMessage } from '../../core/protocol/jsonrpc.ts';
import { ChannelClosed, type ChannelEvents, type MessageChannel } from '../../core/upstream/channel/channel.ts';

export interface MemoryChannel extends MessageChannel {
  /** Ends the channel with `reason` (once), as if its process exited. */
  exit(reason: string): void;
}

export function memoryChannel(events: ChannelEvents, server: McpServer, onExit: () => void = () => {}): MemoryChannel {
  const [near, far] = InMemoryTransport.createLinkedPair();
  let closed = false;
  void server.connect(far);
  near.onmessage = (message: JSONRPCMessage) => {
    if (!closed) events.message(message as JsonRpcMessage);
  };
  void near.start();
  const channel: MemoryChannel = {
    send(text) {
      if (closed) return new ChannelClosed('exited');
      queueMicrotask(() => void near.send(JSON.parse(text) as JSONRPCMessage));
      return null;
    },
    async close() {
      channel.exit('was ended');
    },
    exit(reason: string) {
      if (closed) return;
      closed = true;
      onExit();
      void near.close();
      queueMicrotask(() => events.closed(new ChannelClosed(reason)));
    },
  };
  return channel;
}
