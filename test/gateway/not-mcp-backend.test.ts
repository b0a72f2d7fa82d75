/**
 * A backend URL that is not the MCP endpoint (the server's root instead of `/mcp`, a common
 * slip): the start-up probe logs the backend, its URL and what it answered, `/status` shows it
 * unhealthy with that reason, and a client's request gets a JSON-RPC error naming the backend
 * instead of the backend's error page, in both modes. A 404 to a request with a session is
 * MCP's "unknown session" and still reaches the client as it is.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { INITIALIZE, post, startTestGateway } from '../helpers/gateway.ts';

type Running = Awaited<ReturnType<typeof startTestGateway>>;

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

for (const mode of ['transparent', 'aggregated'] as const) {
  describe(`a backend URL that is not its MCP endpoint (${mode})`, () => {
    let backend: SdkServer;
    let other: SdkServer;
    let gateway: Running;
    let root: string;
    const logs: Record<string, unknown>[] = [];

    before(async () => {
      backend = await startSdkServer({ name: 'tools' });
      other = await startSdkServer({ name: 'other' });
      root = backend.url.replace(/\/mcp$/, '/');
      const log = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
      gateway = await startTestGateway({
        backends: mode === 'transparent' ? [{ name: 'tools', url: root }] : [{ name: 'tools', url: root }, { name: 'other', url: other.url }],
        log,
      });
    });
    after(async () => {
      await gateway?.stop();
      await backend?.close();
      await other?.close();
    });

    it('the start-up probe logs the backend, its URL and what it answered', async () => {
      await until(() => logs.some((l) => l.backend === 'tools' && l.health === 'unhealthy'), 'the probe');
      const line = logs.find((l) => l.backend === 'tools' && l.health === 'unhealthy')!;
      assert.match(String(line.error), new RegExp(`backend "tools" at ${root.replace(/[/.]/g, '\\$&')} answered HTTP 404 to initialize, not as an MCP server`));
      const status = (await (await fetch(gateway.url.replace(/\/mcp$/, '/status'))).json()) as { backends: { name: string; health: string; lastError: string }[] };
      const tools = status.backends.find((b) => b.name === 'tools')!;
      assert.equal(tools.health, 'unhealthy');
      assert.match(tools.lastError, /check its URL/);
    });

    if (mode === 'transparent') {
      it('a client gets a JSON-RPC error naming the backend, not its error page', async () => {
        const res = await post(gateway.url, INITIALIZE);
        assert.equal(res.status, 502);
        const body = res.json as { error: { message: string } };
        assert.match(body.error.message, /backend "tools" at .* answered HTTP 404 \(text\/plain\), not as an MCP server/);
      });
      it('a 404 to a request with a session still reaches the client as the backend sent it', async () => {
        const res = await post(gateway.url, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), { 'mcp-session-id': 'gone', 'mcp-protocol-version': '2025-11-25' });
        assert.equal(res.status, 404);
        assert.doesNotMatch(res.text, /not as an MCP server/);
      });
    } else {
      it('the other backend serves; the misconfigured one is named in the session', async () => {
        const res = await post(gateway.url, INITIALIZE);
        assert.equal(res.status, 200);
      });
    }
  });
}
