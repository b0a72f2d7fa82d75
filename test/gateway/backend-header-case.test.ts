/**
 * Header names are case-insensitive (RFC 9110 §5.1), and real backends capitalise them: Express
 * and Go send `Content-Type`, node:http adds `Content-Length` itself. A transparent gateway with
 * an onResponse hook must still run the hook on such a JSON answer (else a redaction plugin is
 * bypassed), and must send the client exactly one Content-Length, the one of the body it wrote.
 * The response is read as raw bytes: fetch would hide a repeated header or refuse the answer.
 */
import assert from 'node:assert/strict';
import { createServer, type ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Plugin } from '../../core/plugin-api/plugin.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { rawExchange, rawRequestBytes } from '../helpers/raw-http.ts';

/** How the backend writes its JSON answer: the header names differ only in case. */
const WRITERS: Record<string, (res: ServerResponse, body: string) => void> = {
  'setHeader("Content-Type"), Content-Length added by node:http': (res, body) => {
    res.setHeader('Content-Type', 'application/json');
    res.end(body);
  },
  'setHeader("content-type"), Content-Length added by node:http': (res, body) => {
    res.setHeader('content-type', 'application/json');
    res.end(body);
  },
  'writeHead with mixed-case names': (res, body) => {
    res.writeHead(200, { 'CoNtEnT-TyPe': 'application/json; charset=utf-8', 'Content-LENGTH': String(Buffer.byteLength(body)) }).end(body);
  },
  'a media type in capitals (Application/JSON)': (res, body) => {
    res.writeHead(200, { 'content-type': 'Application/JSON', 'content-length': String(Buffer.byteLength(body)) }).end(body);
  },
};

/** Redacts SECRET in every tools/call response the client gets. */
const redact: Plugin = {
  name: 'redact',
  onResponse: {
    methods: ['tools/call'],
    handle(_ctx, response) {
      return JSON.parse(JSON.stringify(response).replaceAll('SECRET', '[redacted]')) as typeof response;
    },
  },
};

const CALL = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'read', arguments: {} } });

describe('transparent mode with a response hook: backend header names in any case', () => {
  let backend: Server;
  let writer: (res: ServerResponse, body: string) => void = () => {};
  let gateway: RunningVmcp;

  before(async () => {
    // A stateless JSON backend: every tools/call answers with a secret.
    backend = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      req.on('end', () => {
        const message = JSON.parse(text) as { id: number };
        writer(res, JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: 'db password SECRET' }] } }));
      });
    });
    await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
    gateway = await startTestGateway({
      backends: [{ name: 'cased', url: `http://127.0.0.1:${(backend.address() as AddressInfo).port}/mcp` }],
      plugins: [{ definition: { name: 'redact', create: () => redact }, config: {}, source: 'code' }],
    });
  });
  after(async () => {
    await gateway.stop();
    await new Promise<void>((resolve) => backend.close(() => resolve()));
  });

  for (const [how, write] of Object.entries(WRITERS)) {
    it(`${how}: the hook runs, and the client gets one Content-Length, the body's`, async () => {
      writer = write;
      const answer = await rawExchange(
        gateway.url,
        rawRequestBytes('POST', gateway.url, [['content-type', 'application/json'], ['accept', 'application/json, text/event-stream'], ['connection', 'close']], CALL),
      );
      assert.equal(answer.status, 200, answer.text);
      const lengths = answer.headLines.filter((line) => /^content-length:/i.test(line));
      assert.equal(lengths.length, 1, `exactly one Content-Length reaches the client: ${lengths.join(' | ')}`);
      assert.equal(Number(lengths[0]!.split(':')[1]), Buffer.byteLength(answer.body, 'latin1'), 'it is the length of the body written');
      assert.doesNotMatch(answer.body, /SECRET/, 'the redaction hook ran');
      assert.deepEqual(JSON.parse(answer.body), { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'db password [redacted]' }] } });
    });
  }
});
