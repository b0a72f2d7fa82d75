/**
 * /readyz tells a load balancer when to send traffic: 503 `starting` until every plugin has
 * started, 200 `ready` after, 503 `draining` once shutdown has begun; /healthz is 200 throughout.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { loadVmcpConfig } from '../../core/config/vmcp-config.ts';
import { createLogger } from '../../core/observe/log.ts';
import { definePlugin } from '../../core/plugin-api/plugin.ts';
import { startVmcp, type RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { vmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';
import { freePort, waitFor } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startTestGateway, vmcpYaml, writeConfig } from '../helpers/gateway.ts';

describe('/readyz while starting', () => {
  let backend: SdkServer;
  before(async () => {
    backend = await startSdkServer({ name: 'alpha' });
  });
  after(() => backend.close());

  it('is 503 starting until the last plugin has started, then 200; /healthz is 200 all along', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slowStart = definePlugin({ name: 'slow-start', create: () => ({ name: 'slow-start', start: () => gate }) });
    const port = await freePort();
    const config = await loadVmcpConfig(await writeConfig(vmcpYaml({ backends: [{ name: 'alpha', url: backend.url }] })));
    const starting = startVmcp({ config, port, log: createLogger('silent'), builtins: vmcpBuiltins(config), plugins: [{ definition: slowStart, config: undefined, source: 'test' }] });
    let gateway: RunningVmcp | undefined;
    try {
      const base = `http://127.0.0.1:${port}`;
      const early = await waitFor(async () => {
        try {
          return await fetch(`${base}/readyz`);
        } catch {
          return undefined; // not listening yet
        }
      }, 10_000);
      assert.equal(early.status, 503);
      assert.deepEqual(await early.json(), { status: 'starting' });
      assert.equal((await fetch(`${base}/healthz`)).status, 200);
      release();
      gateway = await starting;
      const ready = await fetch(`${base}/readyz`);
      assert.equal(ready.status, 200);
      assert.deepEqual(await ready.json(), { status: 'ready' });
    } finally {
      release();
      await (gateway ?? (await starting)).stop();
    }
  });
});

describe('/readyz while draining', () => {
  let slow: Server;
  let backendUrl: string;
  before(async () => {
    // A backend that takes 600 ms over every answer: a request still in flight when shutdown begins.
    slow = createServer((req, res) => {
      req.resume();
      req.on('end', () => setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":1,"result":{}}'), 600));
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    backendUrl = `http://127.0.0.1:${(slow.address() as { port: number }).port}/mcp`;
  });
  after(() => new Promise<void>((resolve) => slow.close(() => resolve())));

  it('is 503 draining once shutdown has begun, while an in-flight request still finishes', async () => {
    const gateway = await startTestGateway({ backends: [{ name: 'slow', url: backendUrl }], spec: '  server: {shutdownGracePeriod: 5s}' });
    const { host } = new URL(gateway.url);
    const socket = connect(Number(new URL(gateway.url).port), '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    const closed = new Promise((resolve) => socket.on('close', resolve));
    const body = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
    socket.write(`POST /mcp HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/json\r\naccept: application/json\r\nmcp-session-id: s\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const stopping = gateway.stop();
    // Same connection (a new one is no longer accepted): asked while the first request is in flight.
    socket.write(`GET /readyz HTTP/1.1\r\nhost: ${host}\r\n\r\n`);
    await stopping;
    await closed;
    const statuses = [...received.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
    assert.deepEqual(statuses, ['200', '503'], received);
    assert.match(received, /"status":"draining"/);
  });
});
