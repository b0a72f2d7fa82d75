/**
 * Where a registry's servers may be reached (MCPGroup spec.registry allowPrivateEndpoint and
 * allowedEndpointCIDRs, core/upstream/endpoint-guard.ts), end to end with the gateway in the test
 * process and real loopback backends: a publisher's server at 127.0.0.1 is refused by default (no
 * request reaches it, the client sees the other backends, /status shows it down with the reason,
 * the log names the address once), allowPrivateEndpoint alone does not allow loopback (ToolHive's
 * meaning), allowedEndpointCIDRs does (a reload applies it); a host name resolving to a private
 * address is refused by its resolved address, one resolving to an allowed address is served; the
 * file's own MCPServer on loopback is never guarded.
 */
import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { loadVmcpConfig } from '../../core/config/vmcp-config.ts';
import type { LookupFunction } from '../../core/http/address-guard.ts';
import type { RegistrySource } from '../../core/vmcp/registry-source.ts';
import { startVmcp, type RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { VmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';
import { textOf, withClient } from '../fixtures/client.ts';
import { waitFor } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { writeConfig } from '../helpers/gateway.ts';

type Line = Record<string, unknown>;

function capturingLogger(): { log: pino.Logger; lines: Line[] } {
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _e, done) {
      for (const t of chunk.toString().split('\n')) if (t.trim() !== '') lines.push(JSON.parse(t) as Line);
      done();
    },
  });
  return { log: pino({ level: 'debug' }, stream), lines };
}

/** The registry's listing, from memory: what a publisher put there. */
class Listing implements RegistrySource {
  readonly label = 'registry "default" (memory)';
  entries: unknown[] = [];
  async page(): Promise<unknown> {
    return { entries: this.entries, metadata: {} };
  }
}

function entry(name: string, url: string): Record<string, unknown> {
  return { type: 'server', name, claims: {}, versions: [{ version: '1.0.0', isLatest: true, server: { name, version: '1.0.0', remotes: [{ type: 'streamable-http', url }] } }] };
}

/** Host names resolved from this table (loopback addresses, or addresses never dialled). */
function hosts(table: Record<string, string>): LookupFunction {
  return (hostname, options, callback) => {
    const address = table[hostname];
    if (address === undefined) return callback(Object.assign(new Error(`${hostname} not found`), { code: 'ENOTFOUND' }), []);
    const found: LookupAddress = { address, family: address.includes(':') ? 6 : 4 };
    if (options.all === true) callback(null, [found]);
    else callback(null, found.address, found.family);
  };
}

describe("a registry's servers reach public addresses only, unless spec.registry allows more", () => {
  let alpha: SdkServer;
  let local: SdkServer;
  const listing = new Listing();
  const builtins = new VmcpBuiltins();
  let captured: ReturnType<typeof capturingLogger>;
  let gateway: RunningVmcp;

  /** The file: group `team` fed by the listing (`endpoints`: YAML lines under spec.registry), with the MCPServer `local` on loopback. */
  async function fileConfig(endpoints: string) {
    const file = await writeConfig(`apiVersion: gatehouse.dev/v1alpha1
kind: MCPGroup
metadata: {name: team}
spec:
  registry:
    url: http://127.0.0.1:1
    name: default
    syncPolicy: {interval: 100ms}
${endpoints.replace(/^/gm, '    ')}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPServer
metadata: {name: local}
spec: {url: "${local.url}", groupRef: team}
---
apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: fed}
spec:
  config: {groupRef: team, operational: {failureHandling: {healthCheckInterval: 200ms}}}
  incomingAuth: {type: anonymous}
`);
    return loadVmcpConfig(file);
  }

  async function status(name: string): Promise<{ health: string; lastError: string | null }> {
    const document = (await (await fetch(new URL('/status', gateway.url))).json()) as { backends: { name: string; health: string; lastError: string | null }[] };
    const backend = document.backends.find((b) => b.name === name);
    assert.ok(backend !== undefined, `${name} in ${JSON.stringify(document.backends.map((b) => b.name))}`);
    return backend;
  }

  const toolNames = (): Promise<string[]> => withClient(gateway.url, {}, async (c) => (await c.client.listTools()).tools.map((t) => t.name).sort());

  before(async () => {
    [alpha, local] = await Promise.all([startSdkServer({ name: 'alpha', tools: ['echo'] }), startSdkServer({ name: 'local', tools: ['echo'] })]);
    listing.entries = [entry('io.github.test/alpha', alpha.url)];
    captured = capturingLogger();
    const config = await fileConfig('');
    gateway = await startVmcp({
      config,
      port: 0,
      log: captured.log,
      builtins: builtins.for(config),
      registrySource: listing,
      upstreams: { lookup: hosts({ 'alpha.test': '127.0.0.1', 'private.test': '10.0.0.5', 'metadata.test': '169.254.169.254' }) },
    });
  });
  after(async () => {
    await gateway?.stop();
    await Promise.all([alpha?.close(), local?.close()]);
  });

  it('by default, one at 127.0.0.1 is refused: no request reaches it, the others serve, /status says why, the log names the address once', async () => {
    assert.deepEqual(gateway.backends.map((b) => b.name), ['local', 'io-github-test-alpha']);
    assert.deepEqual(await toolNames(), ['local_echo']);
    assert.deepEqual(await toolNames(), ['local_echo']);
    const refused = await status('io-github-test-alpha');
    assert.equal(refused.health, 'unhealthy');
    assert.equal(refused.lastError, 'backend "io-github-test-alpha" is unavailable: it is at a loopback address: only MCPGroup/team spec.registry.allowedEndpointCIDRs can allow it');
    assert.equal((await status('local')).health, 'healthy', "the file's own MCPServer on loopback is not guarded");
    assert.equal(alpha.received.length, 0, 'not one request reached it');
    const warnings = captured.lines.filter((l) => /^backend "io-github-test-alpha" is at 127\.0\.0\.1, a loopback address: only MCPGroup\/team spec\.registry\.allowedEndpointCIDRs can allow it; the gateway does not connect to it$/.test(String(l.msg)));
    assert.equal(warnings.length, 1, 'logged once, however many requests and health checks');
    assert.ok(!captured.lines.some((l) => /uncaught|unhandled/i.test(String(l.msg))));
  });

  it('allowPrivateEndpoint alone does not allow loopback (ToolHive\'s meaning); allowedEndpointCIDRs does, applied by a reload', async () => {
    const privateOnly = await fileConfig('allowPrivateEndpoint: true');
    assert.equal((await gateway.reload(privateOnly, builtins.for(privateOnly))).status, 'applied');
    assert.deepEqual(await toolNames(), ['local_echo']);
    assert.equal(alpha.received.length, 0);
    const loopback = await fileConfig('allowedEndpointCIDRs: [127.0.0.0/8]');
    const outcome = await gateway.reload(loopback, builtins.for(loopback));
    assert.equal(outcome.status, 'applied');
    assert.ok(outcome.status === 'applied' && outcome.changes.changed.includes('io-github-test-alpha'), 'the backend changed: its policy did');
    assert.deepEqual(await toolNames(), ['io-github-test-alpha_echo', 'local_echo']);
    assert.match(textOf(await withClient(gateway.url, {}, (c) => c.client.callTool({ name: 'io-github-test-alpha_echo', arguments: { text: 'allowed' } }))), /alpha: allowed/);
    await waitFor(async () => (await status('io-github-test-alpha')).health === 'healthy', 5_000, 50);
  });

  it('a host name is judged by what it resolves to: a private address refused by its address, an allowed one served', async () => {
    const received = alpha.received.length;
    listing.entries = [entry('io.github.test/alpha', `http://alpha.test:${alpha.port}/mcp`), entry('io.github.test/inside', `http://private.test:${alpha.port}/mcp`), entry('io.github.test/meta', `http://metadata.test:${alpha.port}/latest/meta-data/`)];
    await waitFor(() => gateway.backends.length === 4, 5_000, 20);
    assert.deepEqual(await toolNames(), ['io-github-test-alpha_echo', 'local_echo']);
    assert.ok(alpha.received.length > received, 'alpha.test resolved to 127.0.0.1, allowed');
    assert.equal((await status('io-github-test-inside')).lastError, 'backend "io-github-test-inside" is unavailable: it is at a private address: MCPGroup/team spec.registry.allowPrivateEndpoint is off');
    assert.equal((await status('io-github-test-meta')).lastError, 'backend "io-github-test-meta" is unavailable: it is at a cloud metadata address: only MCPGroup/team spec.registry.allowedEndpointCIDRs can allow it');
    const logged = captured.lines.filter((l) => l.backend === 'io-github-test-inside' && l.level === 40 && l.address === '10.0.0.5');
    assert.equal(logged.length, 1);
    assert.equal(logged[0]!.msg, 'backend "io-github-test-inside" (private.test) resolves to 10.0.0.5, a private address: MCPGroup/team spec.registry.allowPrivateEndpoint is off; the gateway does not connect to it');
  });
});
