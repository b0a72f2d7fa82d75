/**
 * Nothing a client sends can put bytes of its choosing onto a backend's wire outside the header
 * values and body the gateway means to send: no CR, LF or NUL in a header, no second request
 * smuggled into the shared keep-alive pool. The bytes each backend received are read back with
 * Node's strict HTTP parser through a recording relay.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { INITIALIZE, post, startTestGateway } from '../helpers/gateway.ts';
import { rawExchange, rawRequestBytes } from '../helpers/raw-http.ts';
import { WireRecorder, type WireReading } from '../helpers/wire-recorder.ts';

const INJECTED = 'x-injected';

/** A multiplexed Last-Event-ID (`m.` + base64url of `[[index, position], ...]`) with any positions. */
function multiplexed(pairs: unknown): string {
  return 'm.' + Buffer.from(JSON.stringify(pairs)).toString('base64url');
}

/** What must hold for every request a backend ever received. */
function assertClean(reading: WireReading): void {
  assert.deepEqual(reading.errors, [], 'every byte a backend received parses as HTTP requests');
  for (const request of reading.requests) {
    assert.ok(['POST', 'GET', 'DELETE'].includes(request.method) && request.url === '/mcp', `${request.method} ${request.url}`);
    for (let i = 0; i < request.headers.length; i += 2) {
      const name = request.headers[i]!.toLowerCase();
      const value = request.headers[i + 1]!;
      assert.notEqual(name, INJECTED, 'no injected header');
      assert.doesNotMatch(value, /[\r\n\0]/);
      assert.ok(!['authorization', 'cookie'].includes(name), `the client's ${name} never reaches a backend`);
    }
  }
}

describe('aggregated mode: a hostile Last-Event-ID', () => {
  let alpha: SdkServer;
  let beta: SdkServer;
  let alphaWire: WireRecorder;
  let betaWire: WireRecorder;
  let gateway: RunningVmcp;
  let session: string;

  before(async () => {
    alpha = await startSdkServer({ name: 'alpha' });
    beta = await startSdkServer({ name: 'beta' });
    alphaWire = await new WireRecorder(alpha.url).start();
    betaWire = await new WireRecorder(beta.url).start();
    gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: alphaWire.url }, { name: 'beta', url: betaWire.url }],
      config: 'operational: {failureHandling: {healthCheckInterval: 0s}}',
    });
    const init = await post(gateway.url, INITIALIZE);
    session = init.headers.get('mcp-session-id')!;
  });
  after(async () => {
    await gateway.stop();
    await Promise.all([alphaWire.close(), betaWire.close()]);
    await Promise.all([alpha.close(), beta.close()]);
  });

  const smuggled = `x\r\n${INJECTED}: yes\r\n\r\nPOST /mcp HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 58\r\n\r\n{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{}}`;

  for (const [what, position] of [
    ['CR LF and a whole request', smuggled],
    ['characters past latin1 that encode to CR LF', `x\u010d\u010a${INJECTED}: yes`],
    ['a NUL', 'x\u0000y'],
  ] as const) {
    it(`with ${what} in a position reaches no backend, and the stream still opens`, async () => {
      const before = { alpha: alpha.received.length, beta: beta.received.length };
      const answer = await rawExchange(
        gateway.url,
        rawRequestBytes('GET', gateway.url, [['accept', 'text/event-stream'], ['mcp-session-id', session], ['last-event-id', multiplexed([[0, position], [1, 'ok']])]]),
        500,
      );
      assert.equal(answer.status, 200, 'a position the gateway did not issue is ignored: the stream starts afresh');
      const reading = alphaWire.read();
      assertClean(reading);
      assertClean(betaWire.read());
      const gets = alpha.received.slice(before.alpha).filter((r) => r.method === 'GET');
      assert.ok(gets.every((r) => r.headers['last-event-id'] === undefined), 'the refused position is not sent');
      const posts = alpha.received.slice(before.alpha).filter((r) => r.method === 'POST');
      assert.deepEqual(posts.map((r) => r.rpcMethods), [], 'no request was smuggled');
    });
  }
});

describe('property: client-chosen values never become CR, LF or NUL on a backend wire', () => {
  const modes = [
    ['transparent', 1],
    ['aggregated', 2],
  ] as const;
  for (const [mode, count] of modes) {
    describe(`${mode} mode`, () => {
      const backends: SdkServer[] = [];
      const wires: WireRecorder[] = [];
      let gateway: RunningVmcp;
      let session: string;

      before(async () => {
        for (let i = 0; i < count; i++) {
          const backend = await startSdkServer({ name: `b${i}` });
          backends.push(backend);
          wires.push(await new WireRecorder(backend.url).start());
        }
        gateway = await startTestGateway({ backends: wires.map((w, i) => ({ name: `b${i}`, url: w.url })) });
        session = (await post(gateway.url, INITIALIZE)).headers.get('mcp-session-id')!;
      });
      after(async () => {
        await gateway.stop();
        await Promise.all(wires.map((w) => w.close()));
        await Promise.all(backends.map((b) => b.close()));
      });

      it('holds for any text in headers, Last-Event-ID (both forms), session ids and Mcp-Name', { timeout: 120_000 }, async () => {
        // Any UTF-16 text: the raw socket sends it latin1 (llhttp then refuses control bytes), and
        // inside a multiplexed id it travels base64-encoded past the HTTP parser.
        // A value sent as raw header bytes cannot hold CR LF (the HTTP parser would split it into the
        // client's own header lines); one that travels encoded can, and carries an injection.
        const text = fc.string({ unit: 'binary', maxLength: 40 });
        const where = fc.constantFrom('header', 'last-event-id-routed', 'last-event-id-multiplexed', 'session-id', 'mcp-name');
        await fc.assert(
          fc.asyncProperty(where, text, async (place, generated) => {
            const value = place === 'last-event-id-multiplexed' || place === 'mcp-name' ? `${generated}\r\n${INJECTED}: yes` : generated;
            const headers: [string, string][] = [['content-type', 'application/json'], ['accept', 'application/json, text/event-stream'], ['connection', 'close']];
            let method = 'POST';
            let body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
            headers.push(['mcp-session-id', place === 'session-id' ? value : session]);
            if (place === 'header') headers.push(['x-custom', value]);
            if (place === 'mcp-name') {
              headers.push(['mcp-method', 'tools/call'], ['mcp-name', value]);
              body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: value } });
            }
            if (place.startsWith('last-event-id')) {
              method = 'GET';
              body = '';
              headers.push(['last-event-id', place === 'last-event-id-routed' ? `0.${value}` : multiplexed([[0, value]])]);
            }
            await rawExchange(gateway.url, Buffer.from(rawRequestBytes(method, gateway.url, headers, body), 'latin1'), 300);
            for (const wire of wires) assertClean(wire.read());
          }),
          { seed: 20261124, numRuns: 150 },
        );
        const answered = await post(gateway.url, INITIALIZE);
        assert.equal(answered.status, 200, 'and the gateway still serves');
      });
    });
  }
});
