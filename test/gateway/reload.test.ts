/**
 * Reloading a running virtual MCP server: a new configuration applied to the live gateway
 * (core/vmcp/virtual-mcp-server.ts `reload`), from the file (plugins/cli/reload.ts), and through the
 * real CLI with SIGHUP and --watch-config. Real sockets, the official SDK client, real backends.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino, { type Logger } from 'pino';
import { Counter } from 'prom-client';
import { definePlugin } from '../../core/plugin-api/plugin.ts';
import { GatewayError } from '../../core/base/errors.ts';
import type { PluginSpec } from '../../core/plugin-api/plugin-loader.ts';
import { loadVmcpConfig, validateVmcpFile } from '../../core/config/vmcp-config.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { connectClient, textOf, withClient } from '../fixtures/client.ts';
import { freePort, waitFor } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startTestGateway, vmcpYaml, writeConfig, type TestBackend, type VmcpYamlOptions } from '../helpers/gateway.ts';
import { serveCli } from '../helpers/cli.ts';
import { fileReload, coalesce, type ReloadTrigger } from '../../plugins/cli/reload.ts';
import { vmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';
import { inlineOidcYaml } from '../incoming-auth/helpers/gateway.ts';
import { KeyIssuer } from '../incoming-auth/helpers/key-issuer.ts';

type Line = Record<string, unknown>;

function capturingLogger(): { log: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString().split('\n')) if (text.trim() !== '') lines.push(JSON.parse(text) as Line);
      done();
    },
  });
  return { log: pino({ level: 'info' }, stream), lines };
}

/** The configuration of `options`, as the gateway would load it from a file. */
async function configOf(options: VmcpYamlOptions) {
  return loadVmcpConfig(await writeConfig(vmcpYaml(options)));
}

async function reloadTo(gateway: RunningVmcp, options: VmcpYamlOptions) {
  const config = await configOf(options);
  return gateway.reload(config, vmcpBuiltins(config));
}

const toolNames = async (c: Awaited<ReturnType<typeof connectClient>>): Promise<string[]> => (await c.client.listTools()).tools.map((t) => t.name).sort();

describe('reload of a running aggregated gateway', () => {
  let alpha: SdkServer;
  let beta: SdkServer;
  let gamma: SdkServer;
  let gateway: RunningVmcp;
  let captured: ReturnType<typeof capturingLogger>;
  const A: TestBackend[] = [];

  before(async () => {
    alpha = await startSdkServer({ name: 'alpha', tools: ['echo'] });
    beta = await startSdkServer({ name: 'beta', tools: ['echo'] });
    gamma = await startSdkServer({ name: 'gamma', tools: ['echo', 'add'] });
    A.push({ name: 'alpha', url: alpha.url }, { name: 'beta', url: beta.url });
    captured = capturingLogger();
    gateway = await startTestGateway({ backends: A, log: captured.log });
  });
  after(async () => {
    await gateway.stop();
    await Promise.all([alpha.close(), beta.close(), gamma.close()]);
  });

  it('adds a backend: a live session keeps its backend sessions, sees the new tools, and its old tools still work', async () => {
    const c = await connectClient(gateway.url);
    try {
      assert.deepEqual(await toolNames(c), ['alpha_echo', 'beta_echo']);
      const alphaSessions = alpha.sessionIds();
      const outcome = await reloadTo(gateway, { backends: [...A, { name: 'gamma', url: gamma.url }] });
      assert.equal(outcome.status, 'applied');
      assert.equal(outcome.status === 'applied' && outcome.changes.added.join(), 'gamma');
      const applied = captured.lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('reload applied'))!;
      assert.match(applied.msg as string, /backends added: gamma/);
      assert.deepEqual(applied.backendsAdded, ['gamma']);

      // The old generation ended the client's GET stream cleanly; the SDK client opens it again
      // (after its reconnection delay, 1 s), on the new generation.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      // The same session, on the new generation: the old tools answer through the same backend session.
      assert.match(textOf(await c.client.callTool({ name: 'alpha_echo', arguments: { text: 'still here' } })), /still here/);
      assert.deepEqual(alpha.sessionIds(), alphaSessions, 'alpha was not initialized again');
      // gamma joins the live session on its next list; the client is told the list changed.
      assert.deepEqual(await toolNames(c), ['alpha_echo', 'beta_echo', 'gamma_add', 'gamma_echo']);
      await c.waitForNotification('notifications/tools/list_changed', undefined, 5_000);
      assert.match(textOf(await c.client.callTool({ name: 'gamma_add', arguments: { a: 2, b: 3 } })), /5/);
      assert.equal(gateway.backends.length, 3);
    } finally {
      await c.close();
    }
  });

  it('removes a backend: its tools leave the lists and calling one is an error; the others keep working', async () => {
    const c = await connectClient(gateway.url);
    try {
      assert.ok((await toolNames(c)).includes('beta_echo'));
      const outcome = await reloadTo(gateway, { backends: [A[0]!, { name: 'gamma', url: gamma.url }] });
      assert.equal(outcome.status, 'applied');
      assert.deepEqual(outcome.status === 'applied' && outcome.changes.removed, ['beta']);
      assert.deepEqual(await toolNames(c), ['alpha_echo', 'gamma_add', 'gamma_echo']);
      const refused = await c.client.callTool({ name: 'beta_echo', arguments: { text: 'x' } }).then(
        (result) => JSON.stringify(result),
        (err: Error) => err.message,
      );
      assert.match(refused, /Unknown tool: beta_echo \(backend "beta" was removed from the configuration\)/);
      assert.match(textOf(await c.client.callTool({ name: 'alpha_echo', arguments: { text: 'ok' } })), /ok/);
    } finally {
      await c.close();
    }
    // A new session sees only the backends of the configuration now served.
    await withClient(gateway.url, {}, async (n) => assert.deepEqual(await toolNames(n), ['alpha_echo', 'gamma_add', 'gamma_echo']));
  });

  it('a client holding its GET stream hears list_changed for a backend added and for one removed, without a request of its own', async () => {
    const c = await connectClient(gateway.url);
    try {
      assert.deepEqual(await toolNames(c), ['alpha_echo', 'gamma_add', 'gamma_echo']);
      // beta returns: it joins the session when the client's GET stream opens again on the new configuration (the SDK waits a second).
      let heard = c.notifications.length;
      assert.equal((await reloadTo(gateway, { backends: [...A, { name: 'gamma', url: gamma.url }] })).status, 'applied');
      await c.waitForNotification('notifications/tools/list_changed', (n) => c.notifications.indexOf(n) >= heard, 5_000);
      // beta leaves again: the old configuration tells the stream before it ends it.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      heard = c.notifications.length;
      assert.equal((await reloadTo(gateway, { backends: [A[0]!, { name: 'gamma', url: gamma.url }] })).status, 'applied');
      await c.waitForNotification('notifications/tools/list_changed', (n) => c.notifications.indexOf(n) >= heard, 5_000);
      assert.deepEqual(await toolNames(c), ['alpha_echo', 'gamma_add', 'gamma_echo']);
      assert.deepEqual(c.errors, [], 'the GET stream reopened each time');
    } finally {
      await c.close();
    }
  });

  it('refuses, as a whole, a change that needs a restart, and names it', async () => {
    const before = gateway.config;
    const outcome = await reloadTo(gateway, { backends: A, spec: '  server: {accessLog: true}' });
    assert.equal(outcome.status, 'restart-needed');
    assert.deepEqual(outcome.status === 'restart-needed' && outcome.parts.map((p) => p.path), ['VirtualMCPServer/vmcp spec.server']);
    assert.equal(gateway.config, before, 'nothing applied: the backends did not change either');
    const lines = captured.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('reload refused'));
    assert.ok(lines.some((l) => /spec\.server needs a restart/.test(l.msg as string)), JSON.stringify(lines));
    await withClient(gateway.url, {}, async (n) => assert.deepEqual(await toolNames(n), ['alpha_echo', 'gamma_add', 'gamma_echo']));
  });

  it('refuses a file with problems, logging each with file:line:col, and keeps serving the old configuration', async () => {
    const file = await writeConfig(vmcpYaml({ backends: [{ name: 'beta', url: 'not a url' }], config: 'session: {ttl: -3}' }));
    const before = gateway.config;
    const count = captured.lines.length;
    await fileReload(file, validateVmcpFile, (next) => gateway.reload(next, vmcpBuiltins(next)), captured.log)('SIGHUP');
    const lines = captured.lines.slice(count);
    assert.equal(lines[0]!.msg, 'reload started');
    const problems = lines.filter((l) => typeof l.problem === 'string');
    assert.ok(problems.length >= 2, JSON.stringify(lines));
    for (const p of problems) assert.ok((p.problem as string).startsWith(`${file}:`) && /:\d+:\d+ /.test(p.problem as string), p.problem as string);
    assert.match(lines.at(-1)!.msg as string, /reload refused: the configuration has \d+ problems; the running configuration keeps serving/);
    assert.equal(gateway.config, before);
    await withClient(gateway.url, {}, async (n) => assert.match(textOf(await n.client.callTool({ name: 'alpha_echo', arguments: { text: 'old' } })), /old/));
  });
});

describe('reload of plugins and auth', () => {
  const SECRET = 'apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {key: "k-123"}';
  const API_KEY = 'apiVersion: gatehouse.dev/v1alpha1\nkind: MCPExternalAuthConfig\nmetadata: {name: api-key}\nspec: {type: headerInjection, headerInjection: {headerName: X-API-Key, valueSecretRef: {name: creds, key: key}}}';
  const allowlist = (allow: string[]): string => `  plugins:\n    - {name: tool-allowlist, module: "${new URL('../../examples/plugins/tool-allowlist.ts', import.meta.url).pathname}", config: {allow: [${allow.join(', ')}]}}`;
  let alpha: SdkServer;
  let beta: SdkServer;
  let gateway: RunningVmcp;

  before(async () => {
    alpha = await startSdkServer({ name: 'alpha', tools: ['echo'] });
    beta = await startSdkServer({ name: 'beta', tools: ['echo'] });
    gateway = await startTestGateway({ backends: [{ name: 'alpha', url: alpha.url }, { name: 'beta', url: beta.url }], spec: allowlist(['alpha_echo', 'beta_echo']) });
  });
  after(async () => {
    await gateway.stop();
    await Promise.all([alpha.close(), beta.close()]);
  });

  it("a plugin's new config and a backend's new outgoing auth apply to a live session", async () => {
    const c = await connectClient(gateway.url);
    try {
      assert.deepEqual(await toolNames(c), ['alpha_echo', 'beta_echo']);
      assert.ok(alpha.received.every((r) => r.headers['x-api-key'] === undefined));
      const outcome = await reloadTo(gateway, {
        backends: [{ name: 'alpha', url: alpha.url, externalAuthConfigRef: 'api-key' }, { name: 'beta', url: beta.url }],
        spec: allowlist(['alpha_echo']),
        documents: `${SECRET}\n---\n${API_KEY}`,
      });
      assert.equal(outcome.status, 'applied');
      if (outcome.status !== 'applied') return;
      assert.deepEqual([outcome.changes.plugins, outcome.changes.outgoingAuth, outcome.changes.incomingAuth, outcome.changes.changed], [true, true, false, ['alpha']]);
      assert.deepEqual(await toolNames(c), ['alpha_echo']);
      const refused = await c.client.callTool({ name: 'beta_echo', arguments: { text: 'x' } }).then(
        (result) => JSON.stringify(result),
        (err: Error) => err.message,
      );
      assert.match(refused, /beta_echo/);
      assert.match(textOf(await c.client.callTool({ name: 'alpha_echo', arguments: { text: 'keyed' } })), /keyed/);
      const call = alpha.received.findLast((r) => r.rpcMethods.includes('tools/call'))!;
      assert.equal(call.headers['x-api-key'], 'k-123', 'the new outgoing auth');
    } finally {
      await c.close();
    }
  });
});

describe('reload of incoming auth to anonymous', () => {
  it("clears the previous auth challenge: a 401 after the reload carries no WWW-Authenticate naming the old resource metadata", async () => {
    const issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
    const backend = await startSdkServer({ name: 'alpha', tools: ['echo'] });
    const port = await freePort();
    const resourceUrl = `http://127.0.0.1:${port}/mcp`;
    // A plugin given in code (it runs in every generation) with a route that answers 401 on its own.
    const gate: PluginSpec = {
      definition: definePlugin({
        name: 'gate',
        create: () => ({ name: 'gate', routes: [{ method: 'GET', path: '/gate', auth: false, handler: () => new GatewayError('unauthorized', 'not you', { status: 401 }) }] }),
      }),
      config: undefined,
      source: 'test',
    };
    const options = (incomingAuth: string): VmcpYamlOptions => ({ backends: [{ name: 'alpha', url: backend.url }], incomingAuth });
    const gateway = await startTestGateway({ ...options(inlineOidcYaml({ issuer: issuer.url, audience: 'aud', resourceUrl })), port, plugins: [gate] });
    try {
      const before = await fetch(`http://127.0.0.1:${port}/gate`);
      assert.equal(before.status, 401);
      assert.match(before.headers.get('www-authenticate') ?? '', /resource_metadata=/, 'with OIDC, a 401 names the protected resource metadata');
      const next = await loadVmcpConfig(await writeConfig(vmcpYaml(options(`  incomingAuth: {type: anonymous, resourceUrl: "${resourceUrl}"}\n`))));
      const outcome = await gateway.reload(next, vmcpBuiltins(next));
      assert.equal(outcome.status, 'applied', JSON.stringify(outcome));
      const after = await fetch(`http://127.0.0.1:${port}/gate`);
      assert.equal(after.status, 401);
      // It kept the OIDC generation's challenge before: a client was sent to sign in where nothing asks it to.
      assert.equal(after.headers.get('www-authenticate'), null);
    } finally {
      await gateway.stop();
      await Promise.all([backend.close(), issuer.close()]);
    }
  });
});

describe('reload refused when the new generation cannot be built', () => {
  it('a plugin config its plugin refuses: nothing applied, the old configuration keeps serving', async () => {
    const alpha = await startSdkServer({ name: 'alpha', tools: ['echo'] });
    const captured = capturingLogger();
    const backends = [{ name: 'alpha', url: alpha.url }];
    const gateway = await startTestGateway({ backends, log: captured.log });
    try {
      const module = new URL('../../examples/plugins/tool-allowlist.ts', import.meta.url).pathname;
      const outcome = await reloadTo(gateway, { backends, spec: `  plugins:\n    - {name: tool-allowlist, module: "${module}", config: {allow: []}}` });
      assert.equal(outcome.status, 'failed');
      const line = captured.lines.find((l) => l.msg === 'reload refused: the new configuration could not be built; the running one keeps serving');
      assert.ok(line !== undefined, JSON.stringify(captured.lines.map((l) => l.msg)));
      assert.match(JSON.stringify(line.err), /spec\.plugins\[0\]\.config/);
      assert.equal(gateway.config.plugins.length, 0);
      await withClient(gateway.url, {}, async (c) => assert.match(textOf(await c.client.callTool({ name: 'echo', arguments: { text: 'old' } })), /old/));
    } finally {
      await gateway.stop();
      await alpha.close();
    }
  });
});

describe('reload of plugins that hold state', () => {
  it('the new plugins start before the old ones stop, and a metric the plugin registers passes to the new one', async () => {
    const alpha = await startSdkServer({ name: 'alpha', tools: ['echo'] });
    const beta = await startSdkServer({ name: 'beta', tools: ['echo'] });
    const events: string[] = [];
    let instances = 0;
    const definition = definePlugin({
      name: 'counting',
      create: (_config, host) => {
        const instance = ++instances;
        const counter = new Counter({ name: 'test_reload_starts_total', help: 'starts of this instance', registers: [] });
        host.metrics.registerMetric(counter);
        return {
          name: 'counting',
          start() {
            counter.inc(instance * 10);
            events.push(`start ${instance}`);
          },
          stop() {
            events.push(`stop ${instance}`);
          },
        };
      },
    });
    const spec: PluginSpec = { definition: definition as PluginSpec['definition'], config: undefined, source: 'test counting' };
    const backends = [{ name: 'alpha', url: alpha.url }];
    const gateway = await startTestGateway({ backends, plugins: [spec] });
    try {
      const outcome = await reloadTo(gateway, { backends: [...backends, { name: 'beta', url: beta.url }] });
      assert.equal(outcome.status, 'applied');
      await waitFor(() => events.includes('stop 1') || undefined, 15_000);
      assert.deepEqual(events, ['start 1', 'start 2', 'stop 1']);
      const metrics = await (await fetch(new URL('/metrics', gateway.url))).text();
      assert.match(metrics, /^test_reload_starts_total 20$/m, 'the new instance\'s counter');
    } finally {
      await gateway.stop();
      await Promise.all([alpha.close(), beta.close()]);
    }
    assert.deepEqual(events, ['start 1', 'start 2', 'stop 1', 'stop 2']);
  });
});

describe('coalescing reloads', () => {
  it('a reload asked for while one runs makes one more run after it, however many were asked', async () => {
    const runs: ReloadTrigger[] = [];
    let release!: () => void;
    const reload = coalesce(async (trigger) => {
      runs.push(trigger);
      if (runs.length === 1) await new Promise<void>((resolve) => (release = resolve));
    });
    const first = reload('SIGHUP');
    await reload('SIGHUP');
    await reload('file watch');
    await reload('SIGHUP');
    release();
    await first;
    assert.deepEqual(runs, ['SIGHUP', 'SIGHUP']);
  });
});

describe('gatehouse vmcp serve: SIGHUP and --watch-config', () => {
  let alpha: SdkServer;
  let beta: SdkServer;
  let gamma: SdkServer;
  before(async () => {
    alpha = await startSdkServer({ name: 'alpha', tools: ['echo'] });
    beta = await startSdkServer({ name: 'beta', tools: ['echo'] });
    gamma = await startSdkServer({ name: 'gamma', tools: ['echo'] });
  });
  after(async () => {
    await Promise.all([alpha.close(), beta.close(), gamma.close()]);
  });

  const logged = (logs: Line[], msg: RegExp): Line[] => logs.filter((l) => typeof l.msg === 'string' && msg.test(l.msg));

  it('SIGHUP applies the changed file; a second SIGHUP with a bad file is refused and the gateway keeps serving', async () => {
    const two = [{ name: 'alpha', url: alpha.url }, { name: 'beta', url: beta.url }];
    const file = await writeConfig(vmcpYaml({ backends: two }));
    const served = await serveCli('vmcp', file);
    try {
      const c = await connectClient(served.url);
      assert.deepEqual(await toolNames(c), ['alpha_echo', 'beta_echo']);
      await writeFile(file, vmcpYaml({ backends: [...two, { name: 'gamma', url: gamma.url }] }));
      served.child.kill('SIGHUP');
      const applied = await waitFor(() => logged(served.logs, /^reload applied/)[0], 10_000);
      assert.deepEqual(applied.backendsAdded, ['gamma']);
      assert.equal(logged(served.logs, /^reload started/)[0]!.trigger, 'SIGHUP');
      assert.deepEqual(await toolNames(c), ['alpha_echo', 'beta_echo', 'gamma_echo']);
      assert.match(textOf(await c.client.callTool({ name: 'gamma_echo', arguments: { text: 'new' } })), /new/);

      await writeFile(file, 'apiVersion: nope\n');
      served.child.kill('SIGHUP');
      await waitFor(() => logged(served.logs, /^reload refused: the configuration has/)[0], 10_000);
      assert.match(textOf(await c.client.callTool({ name: 'alpha_echo', arguments: { text: 'old' } })), /old/);
      await c.close();
      assert.equal(await served.stop(), 0);
    } finally {
      served.child.kill('SIGKILL');
    }
  });

  it('--watch-config reloads when the file changes; a change that needs a restart is refused and named', async () => {
    const file = await writeConfig(vmcpYaml({ backends: [{ name: 'alpha', url: alpha.url }, { name: 'beta', url: beta.url }] }));
    const served = await serveCli('vmcp', file, ['--watch-config']);
    try {
      await waitFor(() => logged(served.logs, /^watching the configuration file/)[0], 5_000);
      await writeFile(file, vmcpYaml({ backends: [{ name: 'alpha', url: alpha.url }] }));
      const applied = await waitFor(() => logged(served.logs, /^reload applied/)[0], 10_000);
      assert.deepEqual(applied.backendsRemoved, ['beta']);
      assert.equal(applied.mode, 'transparent', 'one backend: the new generation is transparent');
      await withClient(served.url, {}, async (c) => assert.deepEqual(await toolNames(c), ['echo']));

      await writeFile(file, vmcpYaml({ backends: [{ name: 'alpha', url: alpha.url }], config: 'session: {ttl: 5m}' }));
      const refused = await waitFor(() => logged(served.logs, /^reload refused: .* needs a restart/)[0], 10_000);
      assert.equal(refused.path, 'VirtualMCPServer/vmcp spec.config.session');
      assert.equal(await served.stop(), 0);
    } finally {
      served.child.kill('SIGKILL');
    }
  });
});
