/**
 * A group fed by a registry (MCPGroup spec.registry, core/vmcp/fed-group.ts), end to end: a real
 * registry server (`gatehouse registry serve`, on the embedded store) and a real gateway
 * (`gatehouse vmcp serve`, reading the registry by URL) as processes of their own, real backends
 * (the SDK servers of test/fixtures), the official SDK client. A server published to the registry
 * becomes a backend whose tools the client lists; publishing, a new version and a deletion are
 * followed while a live session keeps working and hears list_changed; the registry down keeps the
 * last good list (logged once, counted), and its return is logged.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectClient, textOf, withClient, type ConnectedClient } from '../fixtures/client.ts';
import { freePort, waitFor } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { runCli, serveCli, type ServedCli } from '../helpers/cli.ts';
import { tempDir } from '../registry/helpers/registry.ts';

const REGISTRY_YAML = `auth: {mode: anonymous}
sources: [{name: internal, managed: {}}]
registries: [{name: default, sources: [internal]}]
database: {type: embedded, path: ./data}
`;

function vmcpYaml(registryUrl: string, staticUrl: string): string {
  return `apiVersion: gatehouse.dev/v1alpha1
kind: MCPGroup
metadata: {name: team}
spec:
  registry:
    url: ${registryUrl}
    name: default
    syncPolicy: {interval: 300ms}
    timeout: 2s
    allowedEndpointCIDRs: [127.0.0.0/8]   # the test's backends are on loopback
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPServer
metadata: {name: local}
spec: {url: "${staticUrl}", groupRef: team}
---
apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: fed}
spec:
  config: {groupRef: team}
  incomingAuth: {type: anonymous}
`;
}

async function publish(registry: string, body: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${registry}/default/v0.1/publish`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(res.status, 201, await res.text());
}

function server(name: string, version: string, url: string, claims?: Record<string, string>): Record<string, unknown> {
  return { name, version, description: `${name} for the test`, remotes: [{ type: 'streamable-http', url }], ...(claims === undefined ? {} : { claims }) };
}

const toolNames = async (c: ConnectedClient): Promise<string[]> => (await c.client.listTools()).tools.map((t) => t.name).sort();

describe('a group fed by a registry server, both run by the gatehouse command', () => {
  let alpha: SdkServer;
  let beta: SdkServer;
  let gamma: SdkServer;
  let local: SdkServer;
  let registry: ServedCli;
  let registryConfig: string;
  let registryPort: number;
  let gateway: ServedCli;

  before(async () => {
    [alpha, beta, gamma, local] = await Promise.all([
      startSdkServer({ name: 'alpha', tools: ['echo'] }),
      startSdkServer({ name: 'beta', tools: ['echo', 'add'] }),
      startSdkServer({ name: 'gamma', tools: ['echo'] }),
      startSdkServer({ name: 'local', tools: ['echo'] }),
    ]);
    const dir = await tempDir();
    registryConfig = join(dir, 'registry.yaml');
    await writeFile(registryConfig, REGISTRY_YAML);
    registryPort = await freePort();
    registry = await serveCli('registry', registryConfig, ['--port', String(registryPort)]);
    await publish(registry.url, server('io.github.test/alpha', '1.0.0', alpha.url, { team: 'a' }));
    const vmcp = join(dir, 'vmcp.yaml');
    await writeFile(vmcp, vmcpYaml(registry.url, local.url));
    gateway = await serveCli('vmcp', vmcp);
  });
  after(async () => {
    await gateway?.stop();
    await registry?.stop();
    await Promise.all([alpha?.close(), beta?.close(), gamma?.close(), local?.close()]);
  });

  it("lists the tools of a server published before the gateway started, beside the file's own MCPServer", async () => {
    await withClient(gateway.url, {}, async (c) => {
      assert.deepEqual(await toolNames(c), ['io-github-test-alpha_echo', 'local_echo']);
      assert.match(textOf(await c.client.callTool({ name: 'io-github-test-alpha_echo', arguments: { text: 'hi' } })), /alpha: hi/);
    });
  });

  it('follows a publish, a new version and a deletion; a live session hears list_changed each time and keeps working', async () => {
    const c = await connectClient(gateway.url);
    try {
      assert.deepEqual(await toolNames(c), ['io-github-test-alpha_echo', 'local_echo']);
      // Published: beta joins the live session.
      await publish(registry.url, server('io.github.test/beta', '1.0.0', beta.url));
      await c.waitForNotification('notifications/tools/list_changed', undefined, 10_000);
      assert.deepEqual(await toolNames(c), ['io-github-test-alpha_echo', 'io-github-test-beta_add', 'io-github-test-beta_echo', 'local_echo']);
      assert.match(textOf(await c.client.callTool({ name: 'io-github-test-beta_add', arguments: { a: 2, b: 3 } })), /5/);

      // A new version moves alpha to gamma's address: the backend changes, the session follows.
      const heard = c.notifications.length;
      await publish(registry.url, server('io.github.test/alpha', '2.0.0', gamma.url, { team: 'a' }));
      await c.waitForNotification('notifications/tools/list_changed', (n) => c.notifications.indexOf(n) >= heard, 10_000);
      await waitFor(async () => /gamma: moved/.test(textOf(await c.client.callTool({ name: 'io-github-test-alpha_echo', arguments: { text: 'moved' } }))), 10_000, 200);

      // Deleted (its only version): beta leaves; its tools go, the others keep working.
      const before = c.notifications.length;
      const deleted = await fetch(`${registry.url}/default/v0.1/servers/${encodeURIComponent('io.github.test/beta')}/versions/1.0.0`, { method: 'DELETE' });
      assert.equal(deleted.status, 200, await deleted.text());
      await c.waitForNotification('notifications/tools/list_changed', (n) => c.notifications.indexOf(n) >= before, 10_000);
      assert.deepEqual(await toolNames(c), ['io-github-test-alpha_echo', 'local_echo']);
      assert.match(textOf(await c.client.callTool({ name: 'local_echo', arguments: { text: 'still' } })), /local: still/);
    } finally {
      await c.close();
    }
  });

  it('keeps the last good list while the registry is down (logged once, counted) and logs its return', async () => {
    const metric = async (name: string): Promise<number> => {
      const text = await (await fetch(new URL('/metrics', gateway.url))).text();
      const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
      return Number(line?.split(' ').at(-1));
    };
    const warnings = (): Record<string, unknown>[] => gateway.logs.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('the registry cannot be read'));
    assert.equal(warnings().length, 0);
    assert.equal(await metric('gatehouse_vmcp_registry_up'), 1);
    assert.equal(await registry.stop(), 0);
    await waitFor(async () => (await metric('gatehouse_vmcp_registry_reads_total{outcome="failed"}')) >= 3, 15_000, 200);
    assert.equal(await metric('gatehouse_vmcp_registry_up'), 0);
    assert.equal(warnings().length, 1, 'one warning for the outage, however many reads fail');
    assert.match(warnings()[0]!.msg as string, /ECONNREFUSED.*the last good list of its servers \(1\) keeps serving/);
    await withClient(gateway.url, {}, async (c) => {
      assert.deepEqual(await toolNames(c), ['io-github-test-alpha_echo', 'local_echo']);
      assert.match(textOf(await c.client.callTool({ name: 'io-github-test-alpha_echo', arguments: { text: 'kept' } })), /gamma: kept/);
    });
    // Back, on the same port and data: its return is logged once, and reads succeed again.
    registry = await serveCli('registry', registryConfig, ['--port', String(registryPort)]);
    await waitFor(() => gateway.logs.some((l) => typeof l.msg === 'string' && /^the registry is read again after \d+ failed reads$/.test(l.msg)), 15_000, 100);
    assert.equal(await metric('gatehouse_vmcp_registry_up'), 1);
    assert.equal(warnings().length, 1);
  });
});

describe('gatehouse vmcp validate of a registry-fed group', () => {
  it('checks the file alone: the registry need not be up', async () => {
    const dir = await tempDir();
    const file = join(dir, 'vmcp.yaml');
    await writeFile(file, vmcpYaml(`http://127.0.0.1:${await freePort()}`, 'http://127.0.0.1:9/mcp'));
    const result = await runCli(['vmcp', 'validate', '--config', file]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /OK \(VirtualMCPServer\/fed, group "team" with 1 backend and the servers of registry "default" at http:\/\/127\.0\.0\.1:\d+\)/);
  });

  it('accepts the example of examples/registry-fed, and its registry', async () => {
    const vmcp = await runCli(['vmcp', 'validate', '--config', 'examples/registry-fed/vmcp.yaml']);
    assert.equal(vmcp.code, 0, vmcp.stderr);
    assert.match(vmcp.stdout, /OK \(VirtualMCPServer\/registry-fed, group "published" with 1 backend and the servers of registry "default" at http:\/\/127\.0\.0\.1:8080\)/);
    const registryFile = await runCli(['registry', 'validate', '--config', 'examples/registry-fed/registry.yaml']);
    assert.equal(registryFile.code, 0, registryFile.stderr);
  });
});
