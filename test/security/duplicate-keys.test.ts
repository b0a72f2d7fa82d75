/**
 * A JSON object with a key twice is read last-wins by the gateway (JSON.parse) and first-wins by
 * some backends' and clients' parsers. Whatever the gateway or a plugin decided on a message must
 * be what the other side reads: whenever routing or a hook looked at it, the backend gets the
 * message as the gateway parsed it, or the client's own bytes only where every reader reads them
 * alike (no key twice, none spelled with an escape); the client gets a response as the hooks
 * passed it.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import toolAllowlist from '../../examples/plugins/tool-allowlist.ts';
import type { Plugin } from '../../core/plugin-api/plugin.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { INITIALIZE, post, startTestGateway } from '../helpers/gateway.ts';

/** `params.name` twice: the first is what a first-wins parser runs, the second what the gateway checks. */
function callTwice(first: string, second: string): string {
  return `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"${first}","arguments":{"text":"hi"},"name":"${second}"}}`;
}

async function session(url: string): Promise<Record<string, string>> {
  const init = await post(url, INITIALIZE);
  const id = init.headers.get('mcp-session-id');
  const headers: Record<string, string> = id === null ? {} : { 'mcp-session-id': id };
  await post(url, '{"jsonrpc":"2.0","method":"notifications/initialized"}', headers);
  return headers;
}

/** The text of the tools/call bodies a backend received since `from`. */
function callsSince(backend: SdkServer, from: number): string[] {
  return backend.received.slice(from).filter((r) => r.rpcMethods.includes('tools/call')).map((r) => r.text);
}

describe('a key sent twice reaches no one in a form nobody checked', () => {
  let alpha: SdkServer;
  let beta: SdkServer;
  before(async () => {
    alpha = await startSdkServer({ name: 'alpha' });
    beta = await startSdkServer({ name: 'beta' });
  });
  after(async () => {
    await alpha.close();
    await beta.close();
  });

  it('transparent mode with an allow-list: the backend gets only the allowed name', async () => {
    const gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: alpha.url }],
      plugins: [{ definition: toolAllowlist, config: { allow: ['echo'] }, source: 'code' }],
    });
    try {
      const headers = await session(gateway.url);
      const from = alpha.received.length;
      const answer = await post(gateway.url, callTwice('crash', 'echo'), headers);
      assert.equal(answer.status, 200);
      const sent = callsSince(alpha, from);
      assert.equal(sent.length, 1);
      assert.doesNotMatch(sent[0]!, /crash/, 'the name the allow-list never saw is not on the backend wire');
      assert.equal((JSON.parse(sent[0]!) as { params: { name: string } }).params.name, 'echo');
    } finally {
      await gateway.stop();
    }
  });

  it('transparent mode with a per-tool rate limit: the backend gets only the name the limits counted', async () => {
    const gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: alpha.url }],
      config: 'rateLimiting: {tools: [{name: add, shared: {maxTokens: 1, refillPeriod: 1h}}]}',
    });
    try {
      const headers = await session(gateway.url);
      const from = alpha.received.length;
      const answer = await post(gateway.url, callTwice('add', 'echo'), headers);
      assert.equal(answer.status, 200);
      const sent = callsSince(alpha, from);
      assert.equal(sent.length, 1);
      assert.doesNotMatch(sent[0]!, /"add"/, 'the name the limits never counted is not on the backend wire');
      assert.equal((JSON.parse(sent[0]!) as { params: { name: string } }).params.name, 'echo');
    } finally {
      await gateway.stop();
    }
  });

  it('aggregated mode, names unchanged (priority): an excluded tool cannot ride in front of an allowed one', async () => {
    const gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: alpha.url }, { name: 'beta', url: beta.url }],
      config: 'aggregation: {conflictResolution: priority, conflictResolutionConfig: {priorityOrder: [alpha, beta]}, tools: [{workload: alpha, exclude: [crash]}]}, operational: {failureHandling: {healthCheckInterval: 0s}}',
    });
    try {
      const headers = await session(gateway.url);
      const from = alpha.received.length;
      const answer = await post(gateway.url, callTwice('crash', 'echo'), headers);
      assert.equal(answer.status, 200);
      assert.match(answer.text, /"result"/);
      const sent = callsSince(alpha, from);
      assert.equal(sent.length, 1);
      assert.doesNotMatch(sent[0]!, /crash/, 'the excluded name is not on the backend wire');
    } finally {
      await gateway.stop();
    }
  });

  it('aggregated mode, names unchanged: bytes every reader reads alike go as the client wrote them; a key spelled with an escape is written anew', async () => {
    const gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: alpha.url }, { name: 'beta', url: beta.url }],
      config: 'aggregation: {conflictResolution: priority, conflictResolutionConfig: {priorityOrder: [alpha, beta]}}, operational: {failureHandling: {healthCheckInterval: 0s}}',
    });
    try {
      const headers = await session(gateway.url);
      const spaced = '{ "params": { "arguments": { "text": "hi" }, "name": "echo" }, "id": 7, "method": "tools/call", "jsonrpc": "2.0" }';
      let from = alpha.received.length;
      assert.equal((await post(gateway.url, spaced, headers)).status, 200);
      assert.deepEqual(callsSince(alpha, from), [spaced], 'the client\'s bytes, spacing and order as written');
      const escaped = '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"n\\u0061me":"echo","arguments":{"text":"hi"}}}';
      from = alpha.received.length;
      assert.equal((await post(gateway.url, escaped, headers)).status, 200);
      const sent = callsSince(alpha, from);
      assert.equal(sent.length, 1);
      assert.doesNotMatch(sent[0]!, /\\u0061/, 'an escaped key is not passed on as written');
      assert.equal((JSON.parse(sent[0]!) as { params: { name: string } }).params.name, 'echo');
      // A number JSON.parse rounds: the backend gets the value the gateway decided on.
      from = alpha.received.length;
      await post(gateway.url, '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi","n":9007199254740993}}}', headers);
      assert.match(callsSince(alpha, from)[0] ?? '', /"n":9007199254740992\b/);
      // A modern envelope key a legacy client put in `_meta` is taken out (towardLegacy), its other keys kept.
      from = alpha.received.length;
      const enveloped = await post(gateway.url, '{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"progressToken":3}}}', headers);
      assert.equal(enveloped.status, 200);
      const meta = (JSON.parse(callsSince(alpha, from)[0] ?? '{}') as { params?: { _meta?: Record<string, unknown> } }).params?._meta;
      assert.deepEqual(meta, { progressToken: 3 });
    } finally {
      await gateway.stop();
    }
  });

  it('aggregated mode, a 2026-07-28 client\'s bytes for a legacy backend: neither an excluded nor a rate-limited tool rides in front of an allowed one', async () => {
    const gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: alpha.url }, { name: 'beta', url: beta.url }],
      config:
        'aggregation: {conflictResolution: priority, conflictResolutionConfig: {priorityOrder: [alpha, beta]}, tools: [{workload: alpha, exclude: [crash]}]}, ' +
        'rateLimiting: {tools: [{name: add, shared: {maxTokens: 1, refillPeriod: 1h}}]}, operational: {failureHandling: {healthCheckInterval: 0s}}',
    });
    try {
      const meta = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}';
      const headers = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo' };
      for (const hidden of ['crash', 'add', 'add']) {
        const from = alpha.received.length;
        const answer = await post(gateway.url, callTwice(hidden, 'echo').replace(/\}\}$/, `,${meta}}}`), headers);
        assert.equal(answer.status, 200, answer.text);
        assert.match(answer.text, /"result"/);
        const sent = callsSince(alpha, from);
        assert.equal(sent.length, 1);
        assert.doesNotMatch(sent[0]!, new RegExp(`"${hidden}"`), 'the name routing and the limits never saw is not on the backend wire');
      }
    } finally {
      await gateway.stop();
    }
  });
});

describe('a response with a key twice reaches the client as the hooks passed it', () => {
  let backend: Server;
  let url: string;
  /** A stateless JSON backend whose tools/call result carries `result` twice. */
  before(async () => {
    backend = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      req.on('end', () => {
        const message = JSON.parse(text) as { id?: string | number; method: string };
        const id = JSON.stringify(message.id);
        if (message.id === undefined) return void res.writeHead(202).end();
        const results: Record<string, string> = {
          initialize: `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"twice","version":"1"}}`,
          'tools/list': `{"tools":[{"name":"read","inputSchema":{"type":"object"}}]}`,
        };
        const body =
          message.method === 'tools/call'
            ? `{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"SECRET"}]},"result":{"content":[{"type":"text","text":"public"}]}}`
            : `{"jsonrpc":"2.0","id":${id},"result":${results[message.method] ?? '{}'}}`;
        res.writeHead(200, { 'content-type': 'application/json' }).end(body);
      });
    });
    await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(backend.address() as AddressInfo).port}/mcp`;
  });
  after(() => new Promise<void>((resolve) => backend.close(() => resolve())));

  /** A redaction hook: refuses a result that says SECRET (it sees the last `result`, the public one). */
  const redact: Plugin = {
    name: 'redact',
    onResponse: {
      methods: ['tools/call'],
      handle(_ctx, response) {
        return JSON.stringify(response).includes('SECRET') ? { jsonrpc: '2.0', id: response.id, error: { code: -32603, message: 'redacted' } } : undefined;
      },
    },
  };

  for (const mode of ['transparent', 'aggregated'] as const) {
    it(`${mode} mode: the client never reads the part the hook did not see`, async () => {
      const backends = mode === 'transparent' ? [{ name: 'twice', url }] : [{ name: 'twice', url }, { name: 'other', url }];
      const gateway = await startTestGateway({
        backends,
        config: 'operational: {failureHandling: {healthCheckInterval: 0s}}',
        plugins: [{ definition: { name: 'redact', create: () => redact }, config: {}, source: 'code' }],
      });
      try {
        const headers = await session(gateway.url);
        const name = mode === 'transparent' ? 'read' : 'twice_read';
        const answer = await post(gateway.url, JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name, arguments: {} } }), headers);
        assert.equal(answer.status, 200, answer.text);
        assert.match(answer.text, /public/);
        assert.doesNotMatch(answer.text, /SECRET/);
      } finally {
        await gateway.stop();
      }
    });
  }
});
