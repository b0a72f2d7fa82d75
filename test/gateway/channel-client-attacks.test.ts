/**
 * Hostile clients of a stdio backend through the whole gateway (transparent mode passes the
 * client's initialize through to the channel's handshake), the channel an SDK `McpServer` in
 * memory: what one client sends must not deny the backend to the others.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import * as z from 'zod';
import type { ChannelOpeners } from '../../core/upstream/channel/channel-backends.ts';
import type { ChannelEvents, MessageChannel } from '../../core/upstream/channel/channel.ts';
import { connectClient, textOf } from '../fixtures/client.ts';
import { memoryChannel } from '../helpers/memory-channel.ts';
import { post, startTestGateway } from '../helpers/gateway.ts';

/** Each channel a new SDK server with one tool, on an in-memory pair. */
const OPENERS: ChannelOpeners = {
  stdio: () => (events: ChannelEvents): MessageChannel => {
    const server = new McpServer({ name: 'memory', version: '1.0.0' });
    server.registerTool('echo', { description: 'echo', inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] }));
    return memoryChannel(events, server);
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
