/**
 * `spec.server.engine: node`: the transparent-mode, bad-input and server-limits suites again,
 * with the gateway on node:http instead of Gatehouse's own HTTP/1.1 server, so both engines
 * answer alike and hold what a client may make them buffer (server.maxStreamBuffer).
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { it } from 'node:test';
import { startTestGateway } from '../helpers/gateway.ts';

process.env.GATEHOUSE_TEST_ENGINE = 'node';

it('the suites below really run on node:http (its header spelling on the wire)', async () => {
  const gateway = await startTestGateway({ backends: [{ name: 'unused', url: 'http://127.0.0.1:9/mcp' }] });
  try {
    const raw = await new Promise<string>((resolve, reject) => {
      let text = '';
      const socket = connect(Number(new URL(gateway.url).port), '127.0.0.1', () => socket.end('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'));
      socket.on('data', (d) => (text += d.toString()));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    assert.match(raw, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(raw, /\r\nDate: /, 'node:http writes "Date", the Gatehouse engine "date"');
  } finally {
    await gateway.stop();
  }
});

await import('./transparent.test.ts');
await import('./bad-input.test.ts');
await import('../security/limits.test.ts');
