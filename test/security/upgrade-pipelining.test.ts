/**
 * Nothing after a request that asked to switch protocols is served (RFC 9110 §7.8: Gatehouse
 * ignores Upgrade and makes that request the connection's last), and nothing after it is read
 * and queued either: on both engines, requests pipelined behind an Upgrade request whose answer
 * streams (a GET stream) are neither answered nor piled up in memory (node:http framed and queued
 * every one of them), and the stream still ends when its client leaves.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { openRawSession, startTestGateway } from '../helpers/gateway.ts';

for (const engine of ['gatehouse', 'node'] as const) {
  describe(`${engine} engine: requests pipelined behind an Upgrade request`, () => {
    let backend: SdkServer;
    let gateway: RunningVmcp;

    before(async () => {
      backend = await startSdkServer({ name: 'alpha' });
      const saved = process.env.GATEHOUSE_TEST_ENGINE;
      process.env.GATEHOUSE_TEST_ENGINE = engine;
      try {
        gateway = await startTestGateway({ backends: [{ name: 'alpha', url: backend.url }] });
      } finally {
        if (saved === undefined) delete process.env.GATEHOUSE_TEST_ENGINE;
        else process.env.GATEHOUSE_TEST_ENGINE = saved;
      }
    });
    after(async () => {
      await gateway.stop();
      await backend.close();
    });

    it('are neither answered nor queued while its answer streams, and the stream ends with its client', async () => {
      const headers = await openRawSession(gateway.url);
      const { port, host } = new URL(gateway.url);
      const socket = connect(Number(port), '127.0.0.1');
      socket.on('error', () => undefined);
      await new Promise((resolve) => socket.once('connect', resolve));
      let received = '';
      socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      const stream = `GET /mcp HTTP/1.1\r\nHost: ${host}\r\nAccept: text/event-stream\r\nUpgrade: websocket\r\nMcp-Session-Id: ${headers['mcp-session-id']}\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n`;
      const probe = `GET /healthz HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
      socket.write(stream + probe.repeat(2000));
      for (let i = 0; i < 20; i++) socket.write(probe.repeat(2000));
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.match(received, /^HTTP\/1\.1 200 /, 'the Upgrade request is answered (its stream)');
      assert.match(received, /connection: close/i);
      assert.doesNotMatch(received, /"status":"ok"/, 'no request after it is answered');
      // The gateway holds the stream and nothing else of this connection.
      const metrics = await (await fetch(new URL('/metrics', gateway.url))).text();
      const inflight = Number(/gatehouse_requests_in_flight (\d+)/.exec(metrics)?.[1]);
      assert.ok(inflight <= 2, `${inflight} requests in flight (the stream, the /metrics request)`);
      socket.end();
      await Promise.race([closed, new Promise((_, reject) => setTimeout(() => reject(new Error('the stream did not end after its client left')), 5000))]);
    });
  });
}
