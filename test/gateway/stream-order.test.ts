/**
 * Order toward the backend within a session (issue: what the client sent first must be in place
 * at the backend first). The backend is the SDK fixture in JSON-response mode, which asks for
 * sampling and elicitation on the session's standalone GET stream (a `server.request()` with no
 * related request, as the MCP conformance suite's reference everything-server does): when a call
 * reaches it before that stream does, the server's request is dropped and the call hangs.
 *
 * A TCP relay in front of the backend holds each NEW connection's first bytes for 150 ms (what a
 * far backend, or a TLS handshake, costs a new connection): the GET stream needs a new upstream
 * connection, the call rides one kept alive since initialize, so through a gateway that does not
 * keep the order the call always overtakes the stream. The official SDK client opens the GET
 * stream and calls the tool at once, without waiting for the stream's answer.
 */
import assert from 'node:assert/strict';
import { createServer as createTcpServer, connect, type Server as TcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { connectClient, textOf } from '../fixtures/client.ts';
import { startScriptedBackend } from '../fixtures/scripted-backend.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';

const ROUNDS = 20;
const NEW_CONNECTION_DELAY_MS = 150;

/** A TCP relay to `port` that starts relaying each new connection only after `delayMs`. */
async function slowToConnect(port: number, delayMs: number): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: TcpServer = createTcpServer((client) => {
    client.pause();
    const upstream = connect(port, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    setTimeout(() => {
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    }, delayMs).unref();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Within `ms`, or the reason it did not end. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not end within ${ms} ms`)), ms)));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe('order toward the backend: a server that asks on its standalone stream', () => {
  let backend: SdkServer;
  let relay: { url: string; close(): Promise<void> };
  before(async () => {
    backend = await startSdkServer({ name: 'asker', jsonResponse: true });
    relay = await slowToConnect(backend.port, NEW_CONNECTION_DELAY_MS);
  });
  after(async () => {
    await relay.close();
    await backend.close();
  });

  const modes = [
    { mode: 'transparent', backends: () => [{ name: 'asker', url: relay.url }], prefix: '' },
    { mode: 'aggregated', backends: () => [{ name: 'asker', url: relay.url }, { name: 'other', url: backend.url }], prefix: 'asker_' },
  ];
  for (const { mode, backends, prefix } of modes) {
    it(`${mode}: sampling and elicitation asked on the stream reach the client in every one of ${ROUNDS} sessions`, async () => {
      const gateway = await startTestGateway({ backends: backends() });
      try {
        let served = 0;
        const failures: string[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          // Each session opens its GET stream and calls at once (no wait for the stream's answer).
          const c = await connectClient(gateway.url, { capabilities: { sampling: true, elicitation: true }, waitForStandaloneStream: false });
          try {
            const tool = round % 2 === 0 ? 'sample' : 'elicit';
            const args = tool === 'sample' ? { prompt: `round ${round}` } : { message: `round ${round}` };
            const result = await within(c.client.callTool({ name: `${prefix}${tool}`, arguments: args }), 5_000, `${tool} in round ${round}`);
            const text = textOf(result);
            if (tool === 'sample') assert.match(text, new RegExp(`sampled: round ${round}`));
            else assert.match(text, /fixture-user/);
            served++;
          } catch (err) {
            failures.push(String(err));
          } finally {
            await c.close();
          }
        }
        console.log(`# ${mode}: ${served} of ${ROUNDS} sessions served`);
        assert.deepEqual(failures, []);
      } finally {
        await gateway.stop();
      }
    });
  }

  it("a backend that holds its stream's head back does not hold the session's calls back for long", async () => {
    // Some servers answer a GET stream only with its first event: the session's calls wait for
    // it at most OPENING_WAIT_MS (2 s), not the backend's whole timeout.
    const holding = await startScriptedBackend('holding');
    holding.stream = () => undefined; // the head never comes
    const gateway = await startTestGateway({ backends: [{ name: 'holding', url: holding.url, timeout: '30s' }] });
    try {
      const c = await connectClient(gateway.url, { waitForStandaloneStream: false });
      const result = await within(c.client.callTool({ name: 'run', arguments: {} }), 10_000, 'a call behind a held stream');
      assert.equal(textOf(result), 'holding ran');
      await c.close({ terminate: false });
    } finally {
      await gateway.stop();
      await holding.close();
    }
  });
});
