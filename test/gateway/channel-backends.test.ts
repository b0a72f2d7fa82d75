/**
 * Channel backends (stdio, legacy SSE) through the whole gateway, with the channel itself in
 * memory: each channel is a new SDK `McpServer` on an InMemoryTransport, so these tests are about
 * what the gateway makes of channels (sessions, one channel per session or one shared, ids,
 * progress, server→client requests, a channel that closes mid-call, idle channels, limits), in
 * transparent and aggregated mode, with the official SDK client. The real child processes and
 * SSE connections have tests of their own (test/stdio/, test/sse/).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CreateMessageResultSchema } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import type { Plugin } from '../../core/plugin-api/plugin.ts';
import type { ChannelOpeners } from '../../core/upstream/channel/channel-backends.ts';
import type { ChannelEvents, MessageChannel } from '../../core/upstream/channel/channel.ts';
import { connectClient, textOf } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { loadVmcpConfig } from '../../core/config/vmcp-config.ts';
import { vmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';
import { waitFor } from '../fixtures/processes.ts';
import { memoryChannel, type MemoryChannel } from '../helpers/memory-channel.ts';
import { startTestGateway, vmcpYaml, writeConfig, type TestBackend } from '../helpers/gateway.ts';

/** Channels opened, and the way to end one as if its process exited. */
interface MemoryBackend {
  opened: number;
  open: Set<{ exit(reason: string): void }>;
  /** Environment-like state per channel: what each server instance counted. */
  readonly openers: ChannelOpeners;
}

function memoryServer(channel: { exit(reason: string): void }, id: number): McpServer {
  const server = new McpServer({ name: 'memory', version: '1.0.0' });
  let calls = 0;
  server.registerTool('whoami', { description: 'which channel answers', inputSchema: {} }, async () => ({ content: [{ type: 'text', text: `channel ${id} call ${++calls}` }] }));
  server.registerTool('echo', { description: 'echo', inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] }));
  server.registerTool('slow', { description: 'progress', inputSchema: { steps: z.number() } }, async ({ steps }, extra) => {
    for (let i = 1; i <= steps; i++) {
      const token = extra._meta?.progressToken;
      if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps } });
      await new Promise((r) => setTimeout(r, 5));
    }
    return { content: [{ type: 'text', text: 'done' }] };
  });
  server.registerTool('sample', { description: 'asks the client', inputSchema: { prompt: z.string() } }, async ({ prompt }, extra) => {
    const result = await extra.sendRequest({ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 10 } }, CreateMessageResultSchema);
    return { content: [{ type: 'text', text: `sampled: ${(result.content as { text?: string }).text}` }] };
  });
  server.registerTool('die', { description: 'the process exits mid-call', inputSchema: {} }, async () => {
    setTimeout(() => channel.exit('exited with status 3'), 10);
    return new Promise(() => {});
  });
  return server;
}

function memoryBackend(): MemoryBackend {
  const backend: MemoryBackend = {
    opened: 0,
    open: new Set(),
    openers: {
      stdio: () => (events: ChannelEvents): MessageChannel => {
        const id = ++backend.opened;
        const channel: MemoryChannel = memoryChannel(events, memoryServer({ exit: (reason) => channel.exit(reason) }, id), () => backend.open.delete(channel));
        backend.open.add(channel);
        return channel;
      },
      sse: () => {
        throw new Error('no SSE here');
      },
    },
  };
  return backend;
}

const STDIO = 'transport: stdio\ncommand: memory-server';

describe('a stdio backend alone (served transparently) with the SDK client', () => {
  const memory = memoryBackend();
  let gateway: Awaited<ReturnType<typeof startTestGateway>>;
  before(async () => {
    gateway = await startTestGateway({ backends: [{ name: 'mem', transport: STDIO }], channelOpeners: memory.openers });
  });
  after(async () => {
    await gateway.stop();
    assert.equal(memory.open.size, 0, 'stopping the gateway ends every channel');
  });

  it('lists and calls tools; two clients get two channels; progress and sampling reach the client on the call', async () => {
    const a = await connectClient(gateway.url, { onSampling: () => ({ role: 'assistant', content: { type: 'text', text: 'hi' }, model: 'm' }) });
    const b = await connectClient(gateway.url);
    try {
      const tools = await a.client.listTools();
      assert.deepEqual(tools.tools.map((t) => t.name).sort(), ['die', 'echo', 'sample', 'slow', 'whoami']);
      assert.equal(textOf(await a.client.callTool({ name: 'echo', arguments: { text: 'x' } })), 'echo: x');
      const first = textOf(await a.client.callTool({ name: 'whoami', arguments: {} }));
      const second = textOf(await b.client.callTool({ name: 'whoami', arguments: {} }));
      assert.notEqual(first.split(' call')[0], second.split(' call')[0], 'each client session has its own channel');
      assert.equal(memory.opened, 2);
      const progress: number[] = [];
      const slow = await a.client.callTool({ name: 'slow', arguments: { steps: 3 } }, undefined, { onprogress: (p) => progress.push(p.progress) });
      assert.equal(textOf(slow), 'done');
      assert.deepEqual(progress, [1, 2, 3]);
      assert.equal(textOf(await a.client.callTool({ name: 'sample', arguments: { prompt: 'p' } })), 'sampled: hi');
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a modern (2026-07-28) client is served too: the gateway holds the stdio session, and the server\'s sampling request comes back as input_required', async () => {
    const client = new ModernClient({ name: 'modern', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } as never }, capabilities: { sampling: {} } });
    client.setRequestHandler('sampling/createMessage', async () => ({ role: 'assistant', content: { type: 'text', text: 'modern' }, model: 'm' }));
    await client.connect(new ModernTransport(new URL(gateway.url)));
    try {
      assert.ok((await client.listTools()).tools.some((t) => t.name === 'echo'));
      assert.deepEqual((await client.callTool({ name: 'echo', arguments: { text: 'now' } })).content, [{ type: 'text', text: 'echo: now' }]);
      assert.deepEqual((await client.callTool({ name: 'sample', arguments: { prompt: 'p' } })).content, [{ type: 'text', text: 'sampled: modern' }]);
    } finally {
      await client.close();
    }
  });

  it('a channel that exits mid-call fails the call naming the backend and the exit; the next call starts a new one', async () => {
    const c = await connectClient(gateway.url);
    try {
      const before = memory.opened;
      const died = await c.client.callTool({ name: 'die', arguments: {} }).then(
        (result) => JSON.stringify(result),
        (err: Error) => err.message,
      );
      assert.match(died, /backend \\"mem\\" exited with status 3/);
      assert.equal(textOf(await c.client.callTool({ name: 'echo', arguments: { text: 'again' } })), 'echo: again');
      assert.equal(memory.opened, before + 1, 'one new channel, initialized with the session\'s own parameters');
    } finally {
      await c.close();
    }
  });
});

describe('a stdio backend alone, with an onResponse hook on tools/call', () => {
  const memory = memoryBackend();
  let gateway: Awaited<ReturnType<typeof startTestGateway>>;
  /** Rewrites "echo:" in every tools/call response: the answer is read (as messages, from the channel) and written anew. */
  const shout: Plugin = {
    name: 'shout',
    onResponse: {
      methods: ['tools/call'],
      handle(_ctx, response) {
        return JSON.parse(JSON.stringify(response).replaceAll('echo:', 'ECHO:')) as typeof response;
      },
    },
  };
  before(async () => {
    gateway = await startTestGateway({
      backends: [{ name: 'mem', transport: STDIO }],
      channelOpeners: memory.openers,
      plugins: [{ definition: { name: 'shout', create: () => shout }, config: {}, source: 'code' }],
    });
  });
  after(() => gateway.stop());

  it('a JSON answer and an event stream (progress first) both pass the hook; the rest passes as the channel said it', async () => {
    const c = await connectClient(gateway.url);
    try {
      assert.equal(textOf(await c.client.callTool({ name: 'echo', arguments: { text: 'x' } })), 'ECHO: x');
      const progress: number[] = [];
      const slow = await c.client.callTool({ name: 'slow', arguments: { steps: 2 } }, undefined, { onprogress: (p) => progress.push(p.progress) });
      assert.equal(textOf(slow), 'done');
      assert.deepEqual(progress, [1, 2]);
      assert.ok((await c.client.listTools()).tools.some((t) => t.name === 'echo'), 'a method without hooks passes through');
    } finally {
      await c.close();
    }
  });
});

describe('stdio backends aggregated with an HTTP backend', () => {
  const memory = memoryBackend();
  const sharedMemory = memoryBackend();
  let http: SdkServer;
  let gateway: Awaited<ReturnType<typeof startTestGateway>>;
  before(async () => {
    http = await startSdkServer({ name: 'web', tools: ['echo'] });
    const openers: ChannelOpeners = {
      stdio: (backend, config, log) => (backend.name === 'shared' ? sharedMemory : memory).openers.stdio(backend, config, log),
      sse: memory.openers.sse,
    };
    gateway = await startTestGateway({
      backends: [
        { name: 'mem', transport: `${STDIO}\nstdio: {maxProcesses: 2, idleTimeout: 1s}` },
        { name: 'shared', transport: `${STDIO}\nstdio: {shared: true}` },
        { name: 'web', url: http.url },
      ],
      channelOpeners: openers,
    });
  });
  after(async () => {
    await gateway.stop();
    await http.close();
  });

  it('tools of all three, routed; a shared backend runs one channel for every session', async () => {
    const clients = await Promise.all([connectClient(gateway.url), connectClient(gateway.url)]);
    try {
      const names = (await clients[0]!.client.listTools()).tools.map((t) => t.name);
      for (const name of ['mem_echo', 'shared_echo', 'web_echo']) assert.ok(names.includes(name), `${name} in ${names.join(', ')}`);
      for (const c of clients) {
        assert.equal(textOf(await c.client.callTool({ name: 'mem_echo', arguments: { text: 'a' } })), 'echo: a');
        assert.equal(textOf(await c.client.callTool({ name: 'shared_echo', arguments: { text: 'b' } })), 'echo: b');
        assert.match(textOf(await c.client.callTool({ name: 'web_echo', arguments: { text: 'c' } })), /c$/);
      }
      assert.equal(sharedMemory.opened, 1, 'one channel for both sessions');
      assert.equal(memory.opened, 2, 'one channel per session');
      const whoami = await Promise.all(clients.map(async (c) => textOf(await c.client.callTool({ name: 'shared_whoami', arguments: {} }))));
      assert.equal(new Set(whoami.map((w) => w.split(' call')[0])).size, 1, 'the same channel answers both sessions');
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  it('maxProcesses bounds the channels (the longest idle one gives way), and an idle channel ends and comes back', async () => {
    const opened = memory.opened;
    const clients = await Promise.all([0, 1, 2].map(() => connectClient(gateway.url)));
    try {
      for (const c of clients) assert.equal(textOf(await c.client.callTool({ name: 'mem_echo', arguments: { text: 'x' } })), 'echo: x');
      assert.ok(memory.open.size <= 2, `at most 2 channels open (${memory.open.size})`);
      await new Promise((r) => setTimeout(r, 1600));
      assert.equal(memory.open.size, 0, 'idle channels ended after idleTimeout');
      assert.equal(textOf(await clients[0]!.client.callTool({ name: 'mem_echo', arguments: { text: 'back' } })), 'echo: back');
      assert.ok(memory.opened > opened + 3);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });
});

describe('reloads add, keep, change and remove stdio backends', () => {
  const memory = memoryBackend();
  let http: SdkServer;
  let gateway: Awaited<ReturnType<typeof startTestGateway>>;
  const web = (): TestBackend => ({ name: 'web', url: http.url });
  const reloadTo = async (backends: TestBackend[]) => {
    const config = await loadVmcpConfig(await writeConfig(vmcpYaml({ backends })));
    return gateway.reload(config, vmcpBuiltins(config));
  };
  before(async () => {
    http = await startSdkServer({ name: 'web', tools: ['echo'] });
    gateway = await startTestGateway({ backends: [web(), { name: 'extra', url: http.url }], channelOpeners: memory.openers });
  });
  after(async () => {
    await gateway.stop();
    await http.close();
  });

  it('added by a reload, kept by one that leaves it as it was, made anew by a change, ended by its removal', async () => {
    assert.equal((await reloadTo([web(), { name: 'mem', transport: STDIO }])).status, 'applied');
    const c = await connectClient(gateway.url);
    try {
      const first = textOf(await c.client.callTool({ name: 'mem_whoami', arguments: {} }));
      assert.equal(memory.opened, 1);
      // Another backend changes; this one does not: its channel goes on serving the session.
      assert.equal((await reloadTo([web(), { name: 'mem', transport: STDIO }, { name: 'extra', url: http.url }])).status, 'applied');
      const kept = textOf(await c.client.callTool({ name: 'mem_whoami', arguments: {} }));
      assert.equal(kept.split(' call')[0], first.split(' call')[0], 'the same channel');
      assert.equal(memory.opened, 1);
      // Its arguments change: a new transport, and the old channel ends once the old generation closes.
      assert.equal((await reloadTo([web(), { name: 'mem', transport: `${STDIO}\nargs: [--verbose]` }])).status, 'applied');
      const changed = textOf(await c.client.callTool({ name: 'mem_whoami', arguments: {} }));
      assert.notEqual(changed.split(' call')[0], first.split(' call')[0], 'a new channel after the change');
      await waitFor(() => memory.open.size === 1);
      assert.equal((await reloadTo([web()])).status, 'applied');
      await waitFor(() => memory.open.size === 0);
    } finally {
      await c.close();
    }
  });
});
