/**
 * Hostile clients of a stdio backend through the whole gateway (transparent mode passes the
 * client's initialize through to the channel's handshake), the channel an SDK `McpServer` in
 * memory: what one client sends must not deny the backend to the others.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import type { ChannelOpeners } from '../../core/upstream/channel/channel-backends.ts';
import { ChannelClosed, type ChannelEvents, type MessageChannel } from '../../core/upstream/channel/channel.ts';
import type { JsonRpcMessage } from '../../core/protocol/jsonrpc.ts';
import { connectClient, textOf } from '../fixtures/client.ts';
import { post, startTestGateway } from '../helpers/gateway.ts';

/** Each channel a new SDK server with one tool, on an in-memory pair. */
const OPENERS: ChannelOpeners = {
  stdio: () => (events: ChannelEvents): MessageChannel => {
    const [near, far] = InMemoryTransport.createLinkedPair();
    const server = new McpServer({ name: 'memory', version: '1.0.0' });
    server.registerTool('echo', { description: 'echo', inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] }));
    void server.connect(far);
    let closed = false;
    near.onmessage = (message: JSONRPCMessage) => {
      if (!closed) events.message(message as JsonRpcMessage);
    };
    void near.start();
    return {
      send(text) {
        if (closed) return new ChannelClosed('exited');
        queueMicrotask(() => void near.send(JSON.parse(text) as JSONRPCMessage));
        return null;
      },
      async close() {
        if (closed) return;
        closed = true;
        void near.close();
        queueMicrotask(() => events.closed(new ChannelClosed('was ended')));
      },
    };
  },
  sse: () => {
    throw new Error('no SSE here');
  },
};

describe('a client whose initialize the stdio backend refuses', () => {
  let gateway: Awaited<ReturnType<typeof startTestGateway>>;
  before(async () => {
    gateway = await startTestGateway({ backends: [{ name: 'mem', transport: 'transport: stdio\ncommand: memory-server' }], channelOpeners: OPENERS });
  });
  after(async () => {
    await gateway.stop();
  });

  it('is refused itself; the next client, right after, is served (the backend is not backed off)', async () => {
    // No clientInfo, no protocolVersion: the SDK server answers with an error.
    const bad = await post(gateway.url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }));
    assert.match(bad.text, /refused initialize/);
    const good = await connectClient(gateway.url);
    try {
      assert.equal(textOf(await good.client.callTool({ name: 'echo', arguments: { text: 'x' } })), 'echo: x');
    } finally {
      await good.close();
    }
  });
});
