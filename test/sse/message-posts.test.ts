/**
 * The POSTs of a legacy HTTP+SSE channel against scripted servers: a request the server refuses
 * (or that never reaches it) is answered at once with a JSON-RPC error for its id, a refused
 * notification is logged; a notification is taken before anything sent after it is POSTed, while
 * requests travel together; what waits for the endpoint is bounded, and sent once it comes.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import type { JsonRpcMessage } from '../../core/protocol/jsonrpc.ts';
import { UpstreamError } from '../../core/upstream/upstream-error.ts';
import { waitFor } from '../fixtures/processes.ts';
import { eventStream, scenario, type Script, type ScriptedServer } from './channel-harness.ts';

const ENDPOINT = 'event: endpoint\ndata: /messages?sessionId=s1\n\n';


/** The JSON-RPC method (or `response`) of each POST the server received, in order of arrival. */
function postedMethods(server: ScriptedServer): string[] {
  return server.received.filter((r) => r.method === 'POST').map((r) => {
    const message = JSON.parse(r.body) as JsonRpcMessage;
    return 'method' in message ? message.method : 'response';
  });
}

/** A server whose POSTs `answer` decides (the stream announces the endpoint at once). */
function posting(answer: (res: ServerResponse, message: JsonRpcMessage) => void): Script {
  return (req, res, body) => (req.method === 'GET' ? eventStream(res, ENDPOINT) : answer(res, JSON.parse(body) as JsonRpcMessage));
}

describe('a message POSTed on a legacy SSE channel', () => {
  it('that is a request refused with 500 is answered with a JSON-RPC error for its id; a refused notification is logged', async () => {
    await scenario(posting((res) => void res.writeHead(500).end('boom')), {}, async (open) => {
      assert.equal(open.send({ jsonrpc: '2.0', id: 'r-1', method: 'tools/list' }), null);
      const answer = await open.probe.response('r-1');
      assert.deepEqual(answer, { jsonrpc: '2.0', id: 'r-1', error: { code: -32603, message: 'backend "legacy" refused the message (HTTP 500)' } });
      assert.equal(open.send({ jsonrpc: '2.0', method: 'notifications/initialized' }), null);
      await waitFor(() => open.logs.filter((line) => line.msg === 'backend "legacy" refused the message (HTTP 500)').length === 2);
      assert.equal(open.logs.find((line) => line.msg === 'backend "legacy" refused the message (HTTP 500)')!.body, 'boom');
      assert.equal(open.probe.messages.length, 1);
      assert.equal(open.probe.closes.length, 0);
    });
  });

  it('that never reaches the server is answered with an error naming why', async () => {
    await scenario(posting((res) => void res.socket?.destroy()), {}, async (open) => {
      assert.equal(open.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'x' } }), null);
      const answer = await open.probe.response(2);
      assert.equal(answer.error?.code, -32603);
      assert.match(answer.error!.message, /^backend "legacy" did not take the message: it failed \(connection reset\)$/);
    });
  });

  it('whose answer does not come within timeoutMs is answered with an error', async () => {
    await scenario(posting(() => {}), { timeoutMs: 300 }, async (open) => {
      assert.equal(open.send({ jsonrpc: '2.0', id: 3, method: 'tools/list' }), null);
      const answer = await open.probe.response(3);
      assert.equal(answer.error!.message, 'backend "legacy" did not take the message: it did not answer within 300 ms');
    });
  });

  it('is answered 2xx with a body: the body is discarded, bounded', async () => {
    const big = 'x'.repeat(256 * 1024);
    await scenario(posting((res) => void res.writeHead(200, { 'content-type': 'text/plain' }).end(big)), { maxResponseBytes: 64 * 1024 }, async (open, server) => {
      assert.equal(open.send({ jsonrpc: '2.0', id: 4, method: 'tools/list' }), null);
      assert.equal(open.send({ jsonrpc: '2.0', method: 'notifications/initialized' }), null);
      await waitFor(() => postedMethods(server).length === 2);
      assert.deepEqual(open.probe.messages, []);
      assert.equal(open.probe.closes.length, 0);
    });
  });
});

describe('the order of the POSTs of a legacy SSE channel', () => {
  it('sends nothing after a notification before the server took it', async () => {
    let initializedAnswered = 0;
    let listArrived = 0;
    const script = posting((res, message) => {
      if ('method' in message && message.method === 'notifications/initialized') {
        setTimeout(() => {
          initializedAnswered = performance.now();
          res.writeHead(202).end();
        }, 150);
        return;
      }
      listArrived = performance.now();
      res.writeHead(202).end();
    });
    await scenario(script, {}, async (open, server) => {
      assert.equal(open.send({ jsonrpc: '2.0', method: 'notifications/initialized' }), null);
      assert.equal(open.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), null);
      await waitFor(() => listArrived > 0);
      assert.deepEqual(postedMethods(server), ['notifications/initialized', 'tools/list']);
      assert.ok(initializedAnswered > 0 && listArrived >= initializedAnswered, 'tools/list arrived before initialized was taken');
    });
  });

  it('lets requests travel together', async () => {
    const held: ServerResponse[] = [];
    await scenario(posting((res) => void held.push(res)), { timeoutMs: 10_000 }, async (open) => {
      for (let id = 1; id <= 3; id++) assert.equal(open.send({ jsonrpc: '2.0', id, method: 'tools/list' }), null);
      // All three reach the server while none was taken.
      await waitFor(() => held.length === 3, 1_000);
      for (const res of held) res.writeHead(202).end();
    });
  });
});

describe('what waits for the endpoint of a legacy SSE channel', () => {
  it('is at most 64 messages, sent once the endpoint comes', async () => {
    let stream: ServerResponse | null = null;
    const script: Script = (req, res) => {
      if (req.method === 'GET') {
        eventStream(res);
        stream = res;
      } else res.writeHead(202).end();
    };
    await scenario(script, {}, async (open, server) => {
      for (let id = 0; id < 64; id++) assert.equal(open.send({ jsonrpc: '2.0', id, method: 'ping' }), null);
      const refused = open.send({ jsonrpc: '2.0', id: 64, method: 'ping' });
      assert.ok(refused instanceof UpstreamError);
      assert.equal(refused.code, 'ESSE_QUEUE_FULL');
      assert.equal(refused.message, 'has not announced its message endpoint yet, and 64 messages already wait for it');
      await waitFor(() => stream !== null);
      stream!.write(ENDPOINT);
      await waitFor(() => postedMethods(server).length === 64);
      const ids = server.received.filter((r) => r.method === 'POST').map((r) => (JSON.parse(r.body) as { id: number }).id);
      assert.deepEqual([...ids].sort((a, b) => a - b), Array.from({ length: 64 }, (_, id) => id));
    });
  });

  it('is at most maxResponseBytes in all', async () => {
    await scenario((req, res) => (req.method === 'GET' ? eventStream(res) : res.writeHead(202).end()), { maxResponseBytes: 4 * 1024 }, async (open) => {
      const message = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: { pad: 'p'.repeat(3000) } } } as const;
      assert.equal(open.send(message), null);
      const refused = open.send({ ...message, id: 2 });
      assert.equal(refused?.message, 'has not announced its message endpoint yet, and the messages waiting for it would exceed 4 KiB (operational.maxBackendResponseSize)');
    });
  });
});
