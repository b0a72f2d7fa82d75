/**
 * The application lifecycle both servers compose (core/server/app.ts), over a real listening socket:
 * the order of release, a start that fails half way, a release that throws.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { App } from '../../core/server/app.ts';
import { createLogger } from '../../core/observe/log.ts';
import { GatewayMetrics } from '../../core/observe/metrics.ts';
import { definePlugin } from '../../core/plugin-api/plugin.ts';
import type { PluginSpec } from '../../core/plugin-api/plugin-loader.ts';
import { acceptsConnections } from '../fixtures/processes.ts';

const HOST_INFO = { mcpPath: null, backends: [], configDir: process.cwd() };

function newApp(): App {
  return new App({ log: createLogger('silent'), metrics: new GatewayMetrics() });
}

/** A plugin that writes `start <name>` / `stop <name>` to `events`; `failStart` makes its start throw. */
function recordingPlugin(name: string, events: string[], failStart = false): PluginSpec {
  const definition = definePlugin({
    name,
    create: () => ({
      name,
      start() {
        if (failStart) throw new Error(`${name} cannot start`);
        events.push(`start ${name}`);
      },
      stop() {
        events.push(`stop ${name}`);
      },
    }),
  });
  return { definition: definition as PluginSpec['definition'], config: undefined, source: `test ${name}` };
}

function serve(app: App): void {
  app.serve({ host: '127.0.0.1', port: 0, mcp: null, publicUrls: [], allowedHosts: [], allowedOrigins: [], shutdownGraceMs: 1000, accessLog: false });
}


describe('App lifecycle', () => {
  it('stops the server first, then releases resources in reverse order, and the plugins last', async () => {
    const events: string[] = [];
    const app = newApp();
    await app.plugins([recordingPlugin('a', events), recordingPlugin('b', events)], HOST_INFO);
    app.own('pool', () => void events.push('release pool'));
    app.own('store', () => void events.push('release store'));
    serve(app);
    app.onStart(() => void events.push('start hook'));
    const address = await app.start();
    assert.equal(app.url('/x'), `http://127.0.0.1:${address.port}/x`);
    assert.equal((await fetch(app.url('/readyz'))).status, 200);

    await app.stop();
    assert.deepEqual(events, ['start a', 'start b', 'start hook', 'release store', 'release pool', 'stop b', 'stop a']);
    assert.equal(await acceptsConnections(address.port), false, 'the port is closed');
    await app.stop(); // idempotent
    assert.equal(events.length, 7);
  });

  it('a start that fails half way releases exactly what was acquired, in reverse, and rethrows the cause', async () => {
    const events: string[] = [];
    const app = newApp();
    await app.plugins([recordingPlugin('a', events), recordingPlugin('b', events, true), recordingPlugin('c', events)], HOST_INFO);
    app.own('store', () => void events.push('release store'));
    serve(app);
    app.onStart(() => void events.push('start hook'));
    await assert.rejects(app.start(), /b cannot start/);
    assert.deepEqual(events, ['start a', 'release store', 'stop a'], 'c never started, b never stopped, no start hook');
    assert.equal(await acceptsConnections(app.server.address.port), false);
  });

  it('a release that throws is logged; the others still run and stop() resolves', async () => {
    const events: string[] = [];
    const app = newApp();
    await app.plugins([recordingPlugin('a', events)], HOST_INFO);
    app.own('first', () => void events.push('release first'));
    app.own('broken', () => {
      throw new Error('cannot release');
    });
    app.own('last', () => Promise.reject(new Error('cannot release either')));
    serve(app);
    await app.start();
    await app.stop();
    assert.deepEqual(events, ['start a', 'release first', 'stop a']);
  });

  it('listens first by default, and with listenLast (a worker of server.workers) once plugins and hooks have started', async () => {
    for (const listenLast of [false, true]) {
      const events: string[] = [];
      const app = new App({ log: createLogger('silent'), metrics: new GatewayMetrics(), listenLast });
      const listening = (): boolean => {
        try {
          return app.server.address.port > 0;
        } catch {
          return false;
        }
      };
      const plugin = definePlugin({ name: 'p', create: () => ({ name: 'p', start: () => void events.push(`plugin start, listening: ${listening()}`) }) });
      await app.plugins([{ definition: plugin as PluginSpec['definition'], config: undefined, source: 'test p' }], HOST_INFO);
      serve(app);
      app.onStart(() => void events.push(`hook, listening: ${listening()}`));
      const address = await app.start();
      assert.deepEqual(events, [`plugin start, listening: ${!listenLast}`, `hook, listening: ${!listenLast}`]);
      assert.equal((await fetch(app.url('/readyz'))).status, 200);
      await app.stop();
      assert.equal(await acceptsConnections(address.port), false);
    }
  });
});
