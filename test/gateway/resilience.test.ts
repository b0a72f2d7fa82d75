/**
 * A gateway kept under load while its backend restarts: requests during the outage get a clear
 * 502 quickly (no hang, no crash), and the gateway serves again as soon as the backend is back.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { connectClient, type ConnectedClient } from '../fixtures/client.ts';
import { freePort, spawnFixture, waitFor } from '../fixtures/processes.ts';
import { startTestGateway } from '../helpers/gateway.ts';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('backend restart under load', () => {
  it('keeps serving after the backend is back', async () => {
    const port = await freePort();
    const args = ['--port', String(port), '--name', 'phoenix'];
    let backend = await spawnFixture('test/fixtures/sdk-server.ts', args);
    const gateway = await startTestGateway({ backends: [{ name: 'phoenix', url: backend.url, timeout: '2s' }] });

    const counts = { ok: 0, failed: 0, slowest: 0 };
    const errors = new Set<string>();
    let phase = 'before';
    const okIn: Record<string, number> = { before: 0, down: 0, after: 0 };
    let running = true;

    async function worker(): Promise<void> {
      let c: ConnectedClient | null = null;
      while (running) {
        const started = Date.now();
        try {
          c ??= await connectClient(gateway.url, { waitForStandaloneStream: false, reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 50, maxReconnectionDelay: 50, reconnectionDelayGrowFactor: 1 } });
          await c.client.listTools();
          counts.ok++;
          okIn[phase]!++;
        } catch (err) {
          counts.failed++;
          errors.add((err as Error).message.replace(/\d+/g, 'N').slice(0, 400));
          const dead = c;
          c = null;
          await dead?.close({ terminate: false }).catch(() => undefined);
          await sleep(20);
        }
        counts.slowest = Math.max(counts.slowest, Date.now() - started);
      }
      await c?.close().catch(() => undefined);
    }

    const workers = Array.from({ length: 6 }, () => worker());
    try {
      await waitFor(() => okIn.before! >= 50, 10_000);
      phase = 'down';
      await backend.kill('SIGKILL');
      await sleep(700);
      phase = 'after';
      backend = await spawnFixture('test/fixtures/sdk-server.ts', args);
      await waitFor(() => okIn.after! >= 50, 10_000);
    } finally {
      running = false;
      await Promise.all(workers);
      await gateway.stop();
      await backend.kill();
    }
    assert.ok(counts.failed > 0, 'the outage was seen');
    assert.ok([...errors].some((e) => /backend \\?"phoenix\\?" is unavailable/.test(e)), [...errors].join('\n'));
    assert.ok(counts.slowest < 5000, `no request hung (slowest ${counts.slowest} ms)`);
    assert.ok(okIn.after! >= 50, 'served again after the restart');
  });
});
