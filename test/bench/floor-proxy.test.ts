/**
 * The floor rows of the load benchmark (bench/load/floor-proxy.ts) pass what they are given: the
 * TCP relay and the HTTP floor each carry a tools/call to the load benchmark's backend and its
 * answer back, over several requests on one keep-alive connection. Only that they work is tested;
 * what they cost is the benchmark's to measure.
 */
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startBackendProcess } from '../../bench/load/backend.ts';
import { startFloorProxy, type FloorKind } from '../../bench/load/floor-proxy.ts';
import type { Target } from '../../bench/load/target.ts';
import { CALL_BODY } from '../../bench/load/wrk.ts';

let backend: Awaited<ReturnType<typeof startBackendProcess>>;
before(async () => {
  backend = await startBackendProcess();
});
after(async () => {
  await backend.child.stop();
});

function post(url: string, agent: Agent): Promise<{ status: number; body: string; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': 'bench-session' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), reused: req.reusedSocket }));
    });
    req.on('error', reject);
    req.end(CALL_BODY);
  });
}

for (const kind of ['relay', 'http'] as FloorKind[]) {
  describe(`floor proxy (${kind})`, () => {
    let target: Target;
    before(async () => {
      target = await startFloorProxy(kind, backend.url);
    });
    after(async () => {
      await target.stop();
    });

    it('carries calls and their answers on one keep-alive connection', async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        for (let i = 0; i < 3; i++) {
          const answer = await post(target.url, agent);
          assert.equal(answer.status, 200);
          assert.match(answer.body, /"echo: hi"/);
          if (i > 0) assert.equal(answer.reused, true);
        }
      } finally {
        agent.destroy();
      }
    });
  });
}
