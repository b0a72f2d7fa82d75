/**
 * The gateway never calls itself through a backend URL (core/http/hop-mark.ts): every request to a
 * backend carries Via with the gateway's entry, and a request to the MCP endpoint that comes back
 * with it is answered 508 Loop Detected before anything else runs. End to end, with gateways in
 * the test process and a counting proxy in front of them where a load balancer would be (it
 * appends its own Via entry, as proxies do):
 *
 *  - aggregated: an MCPServer of the file pointing at the gateway through the proxy, and a
 *    registry's server pointing at the gateway's own URL, are each one refused hop (no request
 *    storm: the requests that reach the gateway through them are counted), shown down in /status
 *    with the reason, while the real backend serves;
 *  - transparent: a client's request through a gateway whose one backend is itself is answered
 *    508, after one hop; a backend gets the client's Via followed by the gateway's entry;
 *  - two replicas behind one balancer, each with a backend URL of the balancer: a request's
 *    chain ends at the first replica it reaches twice (never more than two gateway entries in Via).
 */
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { createLogger } from '../../core/observe/log.ts';
import { loadVmcpConfig } from '../../core/config/vmcp-config.ts';
import type { RegistrySource } from '../../core/vmcp/registry-source.ts';
import { startVmcp, type RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { VmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';
import { textOf, withClient } from '../fixtures/client.ts';
import { freePort } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { writeConfig } from '../helpers/gateway.ts';

const PSEUDONYM = /gatehouse-[0-9a-f]{16}/g;

/** A proxy in front of `targets` (round robin): appends its Via entry, counts what passes and how it was answered. */
class CountingProxy {
  readonly targets: string[] = [];
  requests = 0;
  readonly statuses: number[] = [];
  /** The most Gatehouse entries one request's Via held. */
  maxGateways = 0;
  url = '';
  readonly #server: Server;
  #next = 0;

  constructor() {
    this.#server = createServer((req, res) => {
      this.requests++;
      const via = [req.headers.via].flat().filter((v): v is string => v !== undefined).join(', ');
      this.maxGateways = Math.max(this.maxGateways, via.match(PSEUDONYM)?.length ?? 0);
      const target = new URL(req.url ?? '/', this.targets[this.#next++ % this.targets.length]);
      const headers = { ...req.headers, via: via === '' ? '1.1 test-lb' : `${via}, 1.1 test-lb`, host: target.host };
      const upstream = httpRequest(target, { method: req.method, headers }, (answer) => {
        this.statuses.push(answer.statusCode ?? 0);
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.writeHead(502).end());
      req.pipe(upstream);
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

class Listing implements RegistrySource {
  readonly label = 'registry "default" (memory)';
  constructor(readonly entries: unknown[]) {}
  async page(): Promise<unknown> {
    return { entries: this.entries, metadata: {} };
  }
}

function entry(name: string, url: string): Record<string, unknown> {
  return { type: 'server', name, claims: {}, versions: [{ version: '1.0.0', isLatest: true, server: { name, version: '1.0.0', remotes: [{ type: 'streamable-http', url }] } }] };
}

/** A gateway on `port` whose group holds `servers` (name → URL); `registry`: YAML of spec.registry. */
async function startGateway(port: number, servers: Record<string, string>, options: { registry?: string; source?: RegistrySource } = {}): Promise<RunningVmcp> {
  const documents = Object.entries(servers).map(([name, url]) => `apiVersion: gatehouse.dev/v1alpha1\nkind: MCPServer\nmetadata: {name: ${name}}\nspec: {url: "${url}", groupRef: team}\n`);
  const file = await writeConfig(`apiVersion: gatehouse.dev/v1alpha1
kind: MCPGroup
metadata: {name: team}
${options.registry === undefined ? '' : `spec:\n  registry: ${options.registry}\n`}---
${documents.join('---\n')}---
apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: gw}
spec:
  config: {groupRef: team, operational: {failureHandling: {healthCheckInterval: 300ms}}}
  incomingAuth: {type: anonymous, resourceUrl: "http://127.0.0.1:${port}/mcp"}
`);
  const config = await loadVmcpConfig(file);
  return startVmcp({ config, port, log: createLogger('silent'), builtins: new VmcpBuiltins().for(config), ...(options.source === undefined ? {} : { registrySource: options.source }) });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('the gateway never calls itself through a backend URL', () => {
  const stops: (() => Promise<unknown>)[] = [];
  after(async () => {
    for (const stop of stops.reverse()) await stop();
  });

  async function real(): Promise<SdkServer> {
    const server = await startSdkServer({ name: 'real', tools: ['echo'] });
    stops.push(() => server.close());
    return server;
  }

  async function proxy(): Promise<CountingProxy> {
    const lb = new CountingProxy();
    await lb.start();
    stops.push(() => lb.close());
    return lb;
  }

  it('aggregated: a backend through a balancer to the gateway, and a registry server at its own URL, are one refused hop each: no storm, down in /status, the rest serves', async () => {
    const backend = await real();
    const lb = await proxy();
    const port = await freePort();
    lb.targets.push(`http://127.0.0.1:${port}`);
    const listing = new Listing([entry('io.github.evil/loop', `http://127.0.0.1:${port}/mcp`)]);
    const gateway = await startGateway(port, { real: backend.url, self: `${lb.url}/mcp` }, { registry: '{url: "http://127.0.0.1:1", name: default, allowedEndpointCIDRs: [127.0.0.0/8]}', source: listing });
    stops.push(() => gateway.stop());
    assert.deepEqual(gateway.backends.map((b) => b.name), ['real', 'self', 'io-github-evil-loop']);
    await withClient(gateway.url, {}, async (c) => {
      assert.deepEqual((await c.client.listTools()).tools.map((t) => t.name), ['real_echo']);
      assert.match(textOf(await c.client.callTool({ name: 'real_echo', arguments: { text: 'through' } })), /real: through/);
    });
    const ownEntry = /^1\.1 gatehouse-[0-9a-f]{16}$/;
    assert.ok(backend.received.length > 0 && backend.received.every((r) => ownEntry.test(String(r.headers.via))), 'the real backend gets the gateway\'s entry in Via, on health checks and session requests');
    const status = (await (await fetch(new URL('/status', gateway.url))).json()) as { backends: { name: string; health: string; lastError: string | null }[] };
    for (const name of ['self', 'io-github-evil-loop']) {
      const down = status.backends.find((b) => b.name === name)!;
      assert.equal(down.health, 'unhealthy', name);
      assert.match(down.lastError ?? '', /answered 508 Loop Detected to initialize: its URL leads back to this gateway/, name);
    }
    // Health checks every 300 ms and one client session: each is one refused request per looping backend, no more.
    await sleep(1500);
    const seen = lb.requests;
    assert.ok(seen >= 2 && seen <= 20, `requests through the balancer: ${seen}`);
    assert.ok(lb.statuses.every((s) => s === 508), `every one answered 508: ${lb.statuses.join(' ')}`);
    assert.equal(lb.maxGateways, 1, 'no request went round twice');
    await sleep(600);
    assert.ok(lb.requests - seen <= 6, `and it goes on at the pace of the health checks only: ${lb.requests - seen} in 600 ms`);
  });

  it('transparent: a gateway whose one backend is itself answers the client 508, after one hop', async () => {
    const lb = await proxy();
    const port = await freePort();
    lb.targets.push(`http://127.0.0.1:${port}`);
    const gateway = await startGateway(port, { self: `${lb.url}/mcp` });
    stops.push(() => gateway.stop());
    const res = await fetch(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    });
    assert.equal(res.status, 508);
    // On the MCP endpoint, an error is a JSON-RPC error object; its data names the stable code.
    const body = (await res.json()) as { error: { code: number; message: string; data: { error: string } } };
    assert.equal(body.error.data.error, 'loop_detected');
    assert.match(body.error.message, /has already passed through this gateway/);
    // The client's request and the health checks of the one backend (its era bridge's): each went round once, and was refused there.
    assert.ok(lb.requests >= 1 && lb.requests <= 4, `requests through the balancer: ${lb.requests}`);
    assert.ok(lb.statuses.every((s) => s === 508), lb.statuses.join(' '));
    assert.equal(lb.maxGateways, 1);
  });

  it("a backend gets the client's Via followed by the gateway's entry, in transparent mode as in aggregated", async () => {
    const backend = await real();
    const port = await freePort();
    const gateway = await startGateway(port, { real: backend.url });
    stops.push(() => gateway.stop());
    const res = await fetch(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', via: '1.0 corp-proxy' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    const initialize = backend.received.find((r) => r.rpcMethods.includes('initialize') && String(r.headers.via).startsWith('1.0 corp-proxy'));
    assert.match(String(initialize?.headers.via), /^1\.0 corp-proxy, 1\.1 gatehouse-[0-9a-f]{16}$/);
  });

  it('two replicas behind one balancer, each with a backend URL of the balancer: a chain ends at the first replica reached twice', async () => {
    const backend = await real();
    const lb = await proxy();
    const [portA, portB] = [await freePort(), await freePort()];
    lb.targets.push(`http://127.0.0.1:${portA}`, `http://127.0.0.1:${portB}`);
    const a = await startGateway(portA, { real: backend.url, self: `${lb.url}/mcp` });
    stops.push(() => a.stop());
    const b = await startGateway(portB, { real: backend.url, self: `${lb.url}/mcp` });
    stops.push(() => b.stop());
    for (const gateway of [a, b, a]) {
      await withClient(gateway.url, {}, async (c) => {
        const tools = (await c.client.listTools()).tools.map((t) => t.name);
        assert.ok(tools.includes('real_echo'), tools.join(' '));
        assert.match(textOf(await c.client.callTool({ name: 'real_echo', arguments: { text: 'hi' } })), /real: hi/);
      });
    }
    await sleep(1000);
    assert.ok(lb.maxGateways <= 2, `a request reached the balancer with ${lb.maxGateways} gateway entries: one more hop than there are replicas at most`);
    const seen = lb.requests;
    await sleep(600);
    assert.ok(lb.requests - seen <= 30, `no storm: ${lb.requests - seen} requests in 600 ms through two replicas' health checks and their sessions`);
  });
});
