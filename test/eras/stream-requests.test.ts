/**
 * A legacy backend that asks for input on its session's own stream (an SDK v1 server in JSON
 * response mode asks there: its answer to the call is one JSON body) and a modern client, which
 * takes a server's request only as the input_required answer of a call (2026-07-28 MRTR; its
 * subscriptions/listen carries no requests). The gateway holds that stream for the client's
 * implicit session, opened before the call, and asks what comes on it in the one call in flight:
 * the retry resumes the call, and the backend's JSON answer becomes the retry's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startSdk2Server, type Sdk2Server } from '../fixtures/sdk2-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';

async function modernClient(url: string, name: string): Promise<{ client: ModernClient; asked: string[] }> {
  const asked: string[] = [];
  // A name of its own: an implicit session (per principal and capabilities) no other test shares.
  const client = new ModernClient({ name, version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } as never }, capabilities: { elicitation: { form: {} }, sampling: {}, experimental: { [name]: {} } } });
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(`elicitation: ${request.params.message}`);
    return { action: 'accept', content: { name: 'Ann' } };
  });
  client.setRequestHandler('sampling/createMessage', async (request) => {
    const first = request.params.messages[0]?.content;
    asked.push(`sampling: ${first !== undefined && 'text' in first ? first.text : '?'}`);
    return { role: 'assistant', content: { type: 'text', text: 'sampled by the modern client' }, model: 'test-model', stopReason: 'endTurn' };
  });
  await client.connect(new ModernTransport(new URL(url)));
  return { client, asked };
}

for (const mode of ['transparent', 'aggregated'] as const) {
  describe(`eras, ${mode}: a legacy backend in JSON response mode asks a modern client on its session's stream`, () => {
    let legacy: SdkServer;
    let modern: Sdk2Server | null = null;
    let gateway: RunningVmcp;
    const tool = (name: string) => (mode === 'transparent' ? name : `l_${name}`);

    before(async () => {
      legacy = await startSdkServer({ name: 'l', jsonResponse: true, tools: ['echo', 'elicit', 'sample'] });
      const backends = [{ name: 'l', url: legacy.url }];
      if (mode === 'aggregated') {
        modern = await startSdk2Server({ name: 'm', posture: 'modern' });
        backends.push({ name: 'm', url: modern.url });
      }
      gateway = await startTestGateway({ backends });
    });
    after(async () => {
      await gateway.stop();
      await legacy.close();
      await modern?.close();
    });

    it('elicitation and sampling asked on the stream reach the client as input_required, and the calls complete', async () => {
      const { client, asked } = await modernClient(gateway.url, `stream-${mode}`);
      try {
        const elicited = await client.callTool({ name: tool('elicit'), arguments: { message: 'who are you?' } });
        assert.deepEqual(elicited.structuredContent, { action: 'accept', content: { name: 'Ann' } });
        const sampled = await client.callTool({ name: tool('sample'), arguments: { prompt: 'say something' } });
        assert.deepEqual(sampled.structuredContent, { model: 'test-model', text: 'sampled by the modern client' });
        // Twice more: the stream stays open for the session's next calls.
        for (let i = 0; i < 2; i++) {
          const again = await client.callTool({ name: tool('elicit'), arguments: { message: `again ${i}` } });
          assert.deepEqual(again.structuredContent, { action: 'accept', content: { name: 'Ann' } });
        }
        assert.deepEqual(asked, ['elicitation: who are you?', 'sampling: say something', 'elicitation: again 0', 'elicitation: again 1']);
        assert.deepEqual((await client.callTool({ name: tool('echo'), arguments: { text: 'plain' } })).content, [{ type: 'text', text: 'l: plain' }]);
      } finally {
        await client.close();
      }
      const streams = legacy.received.filter((r) => r.method === 'GET' && typeof r.headers['mcp-session-id'] === 'string');
      assert.equal(streams.length, 1, 'one stream held for the session');
      const answers = legacy.received.filter((r) => r.rpcMethods.includes('response'));
      assert.equal(answers.length, 4, 'each request answered once, on the session');
    });

    it('a client that declared no capability to be asked holds no stream and is never asked', async () => {
      const before = legacy.received.filter((r) => r.method === 'GET').length;
      const client = new ModernClient({ name: 'plain', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } as never } });
      await client.connect(new ModernTransport(new URL(gateway.url)));
      try {
        assert.deepEqual((await client.callTool({ name: tool('echo'), arguments: { text: 'x' } })).content, [{ type: 'text', text: 'l: x' }]);
      } finally {
        await client.close();
      }
      assert.equal(legacy.received.filter((r) => r.method === 'GET').length, before);
    });
  });
}
