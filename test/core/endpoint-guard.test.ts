/**
 * The endpoint guard of registry-fed backends (core/upstream/endpoint-guard.ts) on real sockets,
 * loopback only (host names resolve through a resolver the test gives, as `startVmcp({upstreams:
 * {lookup}})` allows): an IP-literal backend refused before any socket, a host name whose answers
 * are refused (none dialled, nothing sent), judged again at every connect (DNS rebinding), a mixed
 * answer dialled at its allowed address only, the connected address judged before a byte is
 * written, what allowPrivateEndpoint does and does not allow, the client's error (no address) and
 * the log (the address, once per backend and class), and an unguarded pool as it was. The host
 * names end in `.localhost` (names the unit tier's guard, test/unit-guard.ts, knows stay on this
 * host): what they resolve to is the test's resolver's word, and nothing refused is dialled.
 */
import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import type { LookupFunction } from '../../core/http/address-guard.ts';
import { backendInfo, type EndpointPolicy } from '../../core/plugin-api/backend.ts';
import type { DialGuard } from '../../core/upstream/backend-connection.ts';
import type { BackendTransport, Carrier, UpstreamError, UpstreamHandler } from '../../core/upstream/transport.ts';
import { AddressRefusedError, EndpointGuard } from '../../core/upstream/endpoint-guard.ts';
import { Pool } from '../../core/upstream/pool.ts';
import { upstreamError, Upstreams } from '../../core/upstream/upstreams.ts';

/** One response, or the failure. */
class Collecting implements UpstreamHandler {
  status = 0;
  readonly done: Promise<UpstreamError | null>;
  #settle!: (error: UpstreamError | null) => void;
  constructor() {
    this.done = new Promise((resolve) => (this.#settle = resolve));
  }
  attach(_carrier: Carrier): void {}
  onHeaders(status: number): boolean {
    this.status = status;
    return true;
  }
  onData(): boolean {
    return true;
  }
  onComplete(): void {
    this.#settle(null);
  }
  onError(error: UpstreamError): void {
    this.#settle(error);
  }
}

const POLICY: EndpointPolicy = { where: 'MCPGroup/team spec.registry', allowPrivate: false, allowedCidrs: [] };

function capture(): { log: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _e, done) {
      for (const t of chunk.toString().split('\n')) if (t !== '') lines.push(JSON.parse(t) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: 'debug' }, stream), lines };
}

/** A resolver answering each name from `hosts` (the next answer each time, the last one kept), counting the lookups. */
function hostsResolver(hosts: Record<string, string[][]>): LookupFunction & { asked: string[] } {
  const asked: string[] = [];
  const resolve = ((hostname, options, callback) => {
    asked.push(hostname);
    const answers = hosts[hostname];
    if (answers === undefined) return callback(Object.assign(new Error(`${hostname} not found`), { code: 'ENOTFOUND' }), []);
    const addresses = (answers.length > 1 ? answers.shift()! : answers[0]!).map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 }));
    if (options.all === true) return callback(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  }) as LookupFunction & { asked: string[] };
  resolve.asked = asked;
  return resolve;
}

async function request(pool: BackendTransport): Promise<{ status: number; error: UpstreamError | null }> {
  const handler = new Collecting();
  pool.dispatch(handler, 'GET', '/mcp', [], null, 2000);
  const error = await handler.done;
  return { status: handler.status, error };
}

describe('the endpoint guard on the sockets of a pool', () => {
  let server: Server;
  let port: number;
  let connections = 0;
  let bytes = 0;
  before(async () => {
    server = createServer((_req, res) => res.end('ok'));
    server.on('connection', (socket: Socket) => {
      connections++;
      socket.on('data', (chunk: Buffer) => (bytes += chunk.length));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const pool = (host: string, guard: DialGuard | null): Pool => new Pool(new URL(`http://${host}:${port}`), { connections: 4, keepAliveMs: 0, connectTimeoutMs: 2000, guard });

  it('an IP-literal backend at a refused address: refused when the pool is made, every request at once, no socket; logged once', async () => {
    const { log, lines } = capture();
    const before = connections;
    const refused = pool('127.0.0.1', new EndpointGuard('io-x', POLICY, log));
    for (let i = 0; i < 3; i++) {
      const { error } = await request(refused);
      assert.ok(error instanceof AddressRefusedError);
      assert.equal(error.message, 'backend "io-x" is at 127.0.0.1, a loopback address: only MCPGroup/team spec.registry.allowedEndpointCIDRs can allow it');
      assert.equal(error.code, 'EADDRREFUSED');
    }
    assert.equal(connections, before, 'no connection was made');
    assert.equal(lines.length, 1, 'logged once');
    assert.equal(lines[0]!.level, 40);
    assert.deepEqual([lines[0]!.backend, lines[0]!.address, lines[0]!.addressClass], ['io-x', '127.0.0.1', 'loopback']);
    refused.close();
  });

  it('the same backend allowed by allowedEndpointCIDRs is served', async () => {
    const allowed = pool('127.0.0.1', new EndpointGuard('io-x', { ...POLICY, allowedCidrs: ['127.0.0.1/32'] }, null));
    const { status, error } = await request(allowed);
    assert.equal(error, null);
    assert.equal(status, 200);
    allowed.close();
  });

  it('a host name resolving to a private address is refused without dialling, and the log names the address', async () => {
    const { log, lines } = capture();
    const resolve = hostsResolver({ 'private.localhost': [['10.0.0.5']] });
    const before = connections;
    const refused = pool('private.localhost', new EndpointGuard('io-x', POLICY, log, resolve));
    const { error } = await request(refused);
    assert.ok(error instanceof AddressRefusedError);
    assert.equal(error.message, 'backend "io-x" (private.localhost) resolves to 10.0.0.5, a private address: MCPGroup/team spec.registry.allowPrivateEndpoint is off');
    assert.equal(error.addressClass, 'private');
    assert.equal(connections, before);
    assert.deepEqual(resolve.asked, ['private.localhost']);
    assert.match(String(lines[0]!.msg), /^backend "io-x" \(private\.localhost\) resolves to 10\.0\.0\.5, a private address: MCPGroup\/team spec\.registry\.allowPrivateEndpoint is off; the gateway does not connect to it$/);
    refused.close();
  });

  it('judges every connect: a name that rebinds to a refused address after an allowed one is refused on the next connection', async () => {
    // 127.0.0.1 is allowed by the CIDR list; 127.0.0.2 (loopback too, same host) is not.
    const resolve = hostsResolver({ 'rebind.localhost': [['127.0.0.1'], ['127.0.0.2'], ['127.0.0.1']] });
    const guarded = pool('rebind.localhost', new EndpointGuard('io-x', { ...POLICY, allowedCidrs: ['127.0.0.1/32'] }, null, resolve));
    assert.equal((await request(guarded)).status, 200, 'first connect: 127.0.0.1');
    const second = await request(guarded);
    assert.ok(second.error instanceof AddressRefusedError, 'keepAliveMs 0: a new connection, a new lookup, 127.0.0.2');
    assert.match(second.error.message, /resolves to 127\.0\.0\.2, a loopback address/);
    assert.equal((await request(guarded)).status, 200, 'and back');
    assert.deepEqual(resolve.asked, ['rebind.localhost', 'rebind.localhost', 'rebind.localhost']);
    guarded.close();
  });

  it('a mixed answer is dialled at its allowed address only', async () => {
    const resolve = hostsResolver({ 'mixed.localhost': [['169.254.169.254', '10.0.0.5', '127.0.0.1']] });
    const guarded = pool('mixed.localhost', new EndpointGuard('io-x', { ...POLICY, allowedCidrs: ['127.0.0.0/8'] }, null, resolve));
    assert.equal((await request(guarded)).status, 200);
    guarded.close();
    const none = pool('mixed.localhost', new EndpointGuard('io-x', POLICY, null, hostsResolver({ 'mixed.localhost': [['169.254.169.254', '10.0.0.5']] })));
    const { error } = await request(none);
    assert.equal(error?.message, 'backend "io-x" (mixed.localhost) resolves to 169.254.169.254 (and 1 more address, refused too), a cloud metadata address: only MCPGroup/team spec.registry.allowedEndpointCIDRs can allow it');
    none.close();
  });

  it('allowPrivateEndpoint allows private addresses, never loopback, link-local or metadata ones (ToolHive\'s meaning)', () => {
    const guard = new EndpointGuard('io-x', { ...POLICY, allowPrivate: true }, null);
    for (const address of ['10.0.0.5', '172.20.1.1', '192.168.1.1', '100.64.0.1', 'fd12::1', '::ffff:10.0.0.5', '8.8.8.8']) assert.equal(guard.check(address, address), null, address);
    for (const [address, kind] of [['127.0.0.1', 'loopback'], ['::1', 'loopback'], ['169.254.10.1', 'link-local'], ['fe80::1', 'link-local'], ['169.254.169.254', 'metadata'], ['fd00:ec2::254', 'metadata'], ['100.100.100.200', 'metadata'], ['0.0.0.0', 'unspecified'], ['224.0.0.1', 'multicast'], ['::ffff:127.0.0.1', 'loopback'], ['64:ff9b::a9fe:a9fe', 'metadata']] as const) {
      const refusal = guard.check(address, address);
      assert.ok(refusal instanceof AddressRefusedError, address);
      assert.equal(refusal.addressClass, kind, address);
      assert.match(refusal.message, /only MCPGroup\/team spec\.registry\.allowedEndpointCIDRs can allow it$/);
    }
    const listed = new EndpointGuard('io-x', { ...POLICY, allowedCidrs: ['169.254.169.254', '::1'] }, null);
    assert.equal(listed.check('169.254.169.254', 'x'), null, 'a listed range is allowed whatever its class');
    assert.equal(listed.check('::ffff:169.254.169.254', 'x'), null, 'in every form');
    assert.equal(listed.check('::1', 'x'), null);
    assert.ok(listed.check('10.0.0.1', 'x') instanceof AddressRefusedError, 'private stays off');
  });

  it('the connected address is judged before anything is written: a refusal there sends not a byte', async () => {
    const before = { connections, bytes };
    const guard: DialGuard = { lookup: hostsResolver({ 'liar.localhost': [['127.0.0.1']] }), check: (address) => new AddressRefusedError(`connected to ${address}`, address, 'loopback', 'no') };
    const { error } = await request(pool('liar.localhost', guard));
    assert.equal(error?.message, 'connected to 127.0.0.1');
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(connections, before.connections + 1, 'it connected');
    assert.equal(bytes, before.bytes, 'and wrote nothing');
  });

  it('the client is told the class of address and the field, not the address; the log detail has it', async () => {
    const backend = backendInfo('io-x', 'http://private.localhost/mcp', 1000);
    const error = upstreamError(backend, new AddressRefusedError('backend "io-x" (private.localhost) resolves to 10.0.0.5, a private address: X is off', '10.0.0.5', 'private', 'a private address: X is off'));
    assert.equal(error.code, 'backend_unavailable');
    assert.equal(error.description, 'backend "io-x" is unavailable: it is at a private address: X is off');
    assert.doesNotMatch(error.description, /10\.0\.0\.5/);
    assert.match(error.detail ?? '', /10\.0\.0\.5/);
  });

  it('Upstreams: a backend with a policy gets guarded pools of its own; one without shares its origin\'s, unguarded, with no lookup', async () => {
    const resolve = hostsResolver({ 'private.localhost': [['10.0.0.5']] });
    const upstreams = new Upstreams({ lookup: resolve });
    const plain = backendInfo('local', `http://127.0.0.1:${port}/mcp`, 1000);
    const fed = backendInfo('io-x', `http://127.0.0.1:${port}/mcp`, 1000, null, {}, undefined, undefined, undefined, POLICY);
    assert.equal((upstreams.requests(plain) as Pool).guard, null);
    assert.equal((new Upstreams().requests(plain) as Pool).lookup, undefined, 'no resolver given: the socket resolves as it always did');
    assert.notEqual(upstreams.requests(fed), upstreams.requests(plain));
    assert.notEqual(upstreams.streams(fed), upstreams.streams(plain));
    assert.equal(upstreams.requests(fed), upstreams.requests(fed));
    assert.ok((upstreams.requests(fed) as Pool).guard !== null && (upstreams.requests(fed) as Pool).guard === (upstreams.streams(fed) as Pool).guard, "one guard for the backend's two pools");
    assert.equal((await request(upstreams.requests(plain))).status, 200);
    assert.ok((await request(upstreams.requests(fed))).error instanceof AddressRefusedError);
    const named = backendInfo('io-y', 'http://private.localhost/mcp', 1000, null, {}, undefined, undefined, undefined, POLICY);
    assert.match((await request(upstreams.requests(named))).error?.message ?? '', /resolves to 10\.0\.0\.5/, 'the resolver given in code, through the guard');
    await upstreams.close();
  });
});
