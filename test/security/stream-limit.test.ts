/**
 * Long-lived GET streams never starve requests (review H5): a session's standalone GET stream
 * holds a backend connection for as long as the client keeps it open, so one client opening
 * many of them must not take the connections every other user's tools/call needs. Streams have
 * a quota of their own per backend; a stream beyond it is refused at once with a 503 that names
 * the backend and the limit, instead of waiting for a connection that never frees.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { openRawSession, post, startTestGateway } from '../helpers/gateway.ts';

/** Connections per backend for requests, and for streams: small, to reach both in a test. */
const LIMITS = { connections: 4, streams: 2 };
/** More streams than the request pool and the stream quota together could hold. */
const STREAMS = 5;
/** The backends' response-header timeout: a request queued behind the streams fails after it. */
const TIMEOUT_MS = 2000;

const session = openRawSession;

interface StreamAnswer {
  /** HTTP status, or 0 when no answer came within the wait (the stream was queued). */
  status: number;
  body: string;
}

/** Opens a GET stream and waits up to `waitMs` for its status line; the stream stays open until `abort`. */
async function openStream(url: string, headers: Record<string, string>, abort: AbortController, waitMs: number): Promise<StreamAnswer> {
  const answer = fetch(url, { headers: { ...headers, accept: 'text/event-stream' }, signal: abort.signal }).then(
    async (res): Promise<StreamAnswer> => ({ status: res.status, body: res.status === 200 ? '' : await res.text() }),
    (): StreamAnswer => ({ status: 0, body: '' }),
  );
  const timeout = new Promise<StreamAnswer>((resolve) => setTimeout(() => resolve({ status: 0, body: '' }), waitMs).unref());
  return Promise.race([answer, timeout]);
}

for (const mode of ['transparent', 'aggregated'] as const) {
  describe(`${mode} mode: GET streams beyond their quota`, () => {
    let alpha: SdkServer;
    let beta: SdkServer;
    let gateway: RunningVmcp;
    const aborts: AbortController[] = [];

    before(async () => {
      alpha = await startSdkServer({ name: 'alpha', jsonResponse: true });
      beta = await startSdkServer({ name: 'beta', jsonResponse: true });
      const timeout = `${TIMEOUT_MS}ms`;
      gateway = await startTestGateway({
        backends: mode === 'transparent' ? [{ name: 'alpha', url: alpha.url, timeout }] : [{ name: 'alpha', url: alpha.url, timeout }, { name: 'beta', url: beta.url, timeout }],
        config: 'operational: {failureHandling: {healthCheckInterval: 0s}}',
        upstreams: LIMITS,
      });
    });
    after(async () => {
      for (const abort of aborts) abort.abort();
      await gateway.stop();
      await alpha.close();
      await beta.close();
    });

    it('are refused with a 503 naming the backend and the limit, and a tools/call of another session still answers at once', async () => {
      const caller = await session(gateway.url);
      const holders = [];
      for (let i = 0; i < STREAMS; i++) holders.push(await session(gateway.url));
      const answers: StreamAnswer[] = [];
      // One after another: which streams get in is then certain.
      for (const headers of holders) {
        const abort = new AbortController();
        aborts.push(abort);
        answers.push(await openStream(gateway.url, headers, abort, 1000));
      }
      // First what matters most: the streams took no connection another user's request needs.
      const started = performance.now();
      const name = mode === 'transparent' ? 'echo' : 'alpha_echo';
      const call = await post(gateway.url, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: { text: 'still here' } } }), caller);
      const elapsed = performance.now() - started;
      assert.equal(call.status, 200, call.text);
      assert.deepEqual((call.json as { result?: { content: unknown } }).result?.content, [{ type: 'text', text: 'alpha: still here' }]);
      assert.ok(elapsed < TIMEOUT_MS / 2, `the call answered in ${Math.round(elapsed)} ms, not after waiting for a connection`);

      assert.deepEqual(
        answers.map((a) => a.status),
        [...Array<number>(LIMITS.streams).fill(200), ...Array<number>(STREAMS - LIMITS.streams).fill(503)],
        'the streams within the quota open; the others are refused at once (0: still waiting)',
      );
      for (const refused of answers.slice(LIMITS.streams)) {
        // An MCP endpoint's error: a JSON-RPC error body on the HTTP status.
        const { error } = JSON.parse(refused.body) as { error: { code: number; message: string; data: Record<string, unknown> } };
        assert.deepEqual(error.data, { error: 'stream_limit', backend: 'alpha', limit: LIMITS.streams });
        assert.match(error.message, /"alpha"/, 'the refusal names the backend');
        assert.match(error.message, new RegExp(`\\b${LIMITS.streams}\\b`), 'and the limit');
      }

      // A stream that ends gives its place back: a refused session gets in once one closes.
      aborts[0]!.abort();
      const retry = new AbortController();
      aborts.push(retry);
      let reopened: StreamAnswer = { status: 0, body: '' };
      for (let attempt = 0; attempt < 20 && reopened.status !== 200; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
        reopened = await openStream(gateway.url, holders[LIMITS.streams]!, retry, 1000);
      }
      assert.equal(reopened.status, 200, `a freed place is taken again: ${reopened.body}`);
    });
  });
}
