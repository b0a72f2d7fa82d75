/**
 * One request must never end the process: a forged token whose header carries bytes that cannot
 * go into an HTTP header, and a backend that sends more than was asked, are each answered (401,
 * the backend's first response, 502) — and the gateway and the registry keep answering after.
 * Both HTTP engines.
 */
import assert from 'node:assert/strict';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { startSdkServer } from '../fixtures/sdk-server.ts';
import { serveCli } from '../helpers/cli.ts';
import { INITIALIZE, post, startTestGateway, vmcpYaml, writeConfig } from '../helpers/gateway.ts';
import { rawExchange, rawRequestBytes } from '../helpers/raw-http.ts';
import { challengeParams, inlineOidcYaml } from '../incoming-auth/helpers/gateway.ts';
import { b64url, KeyIssuer } from '../incoming-auth/helpers/key-issuer.ts';
import { RESOURCE, startOidcGateway, type OidcGateway } from '../incoming-auth/helpers/oidc-gateway.ts';
import { startIssuer, type TestIssuer } from '../registry/helpers/issuer.ts';
import { providersYaml, startTestRegistry, type TestRegistry } from '../registry/helpers/registry.ts';

/** A JWT whose protected header is `header` (any payload, a signature that is not one). */
function forged(header: Record<string, unknown>, iss = 'https://issuer.example'): string {
  const now = Math.floor(Date.now() / 1000);
  return `${b64url(header)}.${b64url({ iss, sub: 'mallory', aud: RESOURCE, iat: now, exp: now + 600 })}.${b64url('not a signature')}`;
}

/** Header values an attacker would put in a token header: NUL, CR/LF, and characters past latin1 that encode to CR/LF. */
const HOSTILE_ALGS = ['RS256\u0000', 'RS256\r\nx-injected: yes', 'RS256\u010d\u010ax-injected: yes', '\u0000'.repeat(200), 'ES256\u007f'];

for (const engine of ['gatehouse', 'node'] as const) {
  describe(`a hostile token header on the MCP endpoint (engine: ${engine})`, () => {
    let oidc: OidcGateway;
    before(async () => {
      oidc = await startOidcGateway({ alg: 'RS256', spec: `  server: {engine: ${engine}}` });
    });
    after(() => oidc.stop());

    it('is a 401 invalid_token whose challenge carries only printable ASCII, and nothing is injected', async () => {
      const url = oidc.gateway.url;
      for (const alg of HOSTILE_ALGS) {
        const token = forged({ alg, kid: oidc.issuer.keys[0]!.kid });
        const answer = await rawExchange(url, rawRequestBytes('POST', url, [['content-type', 'application/json'], ['authorization', `Bearer ${token}`], ['connection', 'close']], INITIALIZE));
        assert.equal(answer.status, 401, JSON.stringify(alg));
        assert.ok(!answer.headLines.some((line) => line.toLowerCase().startsWith('x-injected')), 'no injected header');
        const challenge = answer.headLines.find((line) => line.toLowerCase().startsWith('www-authenticate:'));
        assert.ok(challenge !== undefined);
        assert.match(challenge, /^[\x20-\x7e]+$/);
        assert.equal(challengeParams(challenge.slice(challenge.indexOf(':') + 1).trim()).error, 'invalid_token');
        const body = JSON.parse(answer.body) as { error: string; error_description: string };
        assert.equal(body.error, 'invalid_token');
        assert.match(body.error_description, /algorithm/);
      }
    });

    it('leaves the gateway answering: a valid token still gets through', async () => {
      const res = await post(oidc.gateway.url, INITIALIZE, { authorization: await oidc.bearer() });
      assert.equal(res.status, 200);
    });
  });
}

describe('the gatehouse process under a hostile token header', () => {
  for (const engine of ['gatehouse', 'node'] as const) {
    it(`stays up and answering (engine: ${engine})`, { timeout: 60_000 }, async () => {
      const issuer = await KeyIssuer.start();
      await issuer.addKey('RS256');
      const backend = await startSdkServer({ name: 'alpha' });
      const config = await writeConfig(
        vmcpYaml({
          backends: [{ name: 'alpha', url: backend.url }],
          incomingAuth: inlineOidcYaml({ issuer: issuer.url, audience: RESOURCE, resourceUrl: RESOURCE }),
          spec: `  server: {engine: ${engine}}`,
        }),
      );
      const served = await serveCli('vmcp', config);
      try {
        let exitedEarly = false;
        void served.exited.then(() => (exitedEarly = true));
        const answer = await post(served.url, INITIALIZE, { authorization: `Bearer ${forged({ alg: 'RS256\u0000', kid: issuer.keys[0]!.kid })}` });
        assert.equal(answer.status, 401);
        assert.equal((await fetch(new URL('/healthz', served.url))).status, 200);
        assert.equal(exitedEarly, false, 'the process is still running');
      } finally {
        assert.equal(await served.stop(), 0, 'and it stops cleanly on SIGTERM');
        await backend.close();
        await issuer.close();
      }
    });
  }
});

describe('a hostile token header on the registry', () => {
  let provider: TestIssuer;
  let registry: TestRegistry;
  before(async () => {
    provider = await startIssuer('registry');
    registry = await startTestRegistry(providersYaml([{ name: 'corp', issuer: provider.url }, { name: 'other', issuer: 'https://other.example' }]));
  });
  after(async () => {
    await registry.stop();
    await provider.close();
  });

  it('is a 401 when the forged token carries a configured provider\'s iss, and the registry keeps answering', async () => {
    for (const alg of HOSTILE_ALGS) {
      const token = forged({ alg, kid: 'k1' }, provider.url);
      const answer = await rawExchange(registry.url, rawRequestBytes('GET', `${registry.url}/v1/me`, [['authorization', `Bearer ${token}`], ['connection', 'close']]));
      assert.equal(answer.status, 401, JSON.stringify(alg));
      assert.ok(answer.headLines.every((line) => /^[\x20-\x7e]+$/.test(line)), 'every header line printable ASCII');
    }
    const me = await registry.request('GET', '/v1/me', { token: await provider.token({ sub: 'alice' }) });
    assert.equal(me.status, 200);
  });
});

/**
 * A backend that answers every request with its response followed, in the same write, by bytes
 * nobody asked for: a second response, or garbage.
 */
class TrailingBackend {
  readonly server: NetServer;
  url = '';
  /** Connections that carried the test's own request (id 7): the gateway's health checks aside. */
  connections = 0;
  readonly #sockets = new Set<Socket>();

  constructor(trailer: string) {
    this.server = createNetServer((socket) => {
      let counted = false;
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
      let buffered = '';
      socket.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('latin1');
        const end = buffered.indexOf('\r\n\r\n');
        if (end === -1) return;
        const length = Number(/content-length: *(\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        const request = JSON.parse(buffered.slice(end + 4, end + 4 + length) || '{}') as { id?: unknown };
        buffered = buffered.slice(end + 4 + length);
        if (request.id === 7 && !counted) {
          counted = true;
          this.connections++;
        }
        const body = JSON.stringify({ jsonrpc: '2.0', id: request.id ?? null, result: { tools: [] } });
        socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}${trailer}`);
      });
      socket.on('error', () => undefined);
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const address = this.server.address() as { port: number };
    this.url = `http://127.0.0.1:${address.port}/mcp`;
  }

  close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const TOOLS_LIST = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' });

for (const [what, trailer] of [
  ['a second response', 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}'],
  ['garbage', 'x\r\nnot http at all\r\n\r\n'],
  ['a second response head without a body', 'HTTP/1.1 204 No Content\r\n\r\n'],
] as const) {
  describe(`a backend that sends ${what} after its response`, () => {
    let backend: TrailingBackend;
    let gateway: RunningVmcp;
    before(async () => {
      backend = new TrailingBackend(trailer);
      await backend.start();
      gateway = await startTestGateway({ backends: [{ name: 'trailing', url: backend.url }] });
    });
    after(async () => {
      await gateway.stop();
      await backend.close();
    });

    it('delivers the response that was asked for, drops that connection, and keeps serving', async () => {
      for (let i = 0; i < 3; i++) {
        const res = await post(gateway.url, TOOLS_LIST, { 'mcp-session-id': 'abc' });
        assert.equal(res.status, 200);
        assert.deepEqual(res.json, { jsonrpc: '2.0', id: 7, result: { tools: [] } }, 'the first response, never the extra one');
      }
      assert.equal(backend.connections, 3, 'a connection that carried extra bytes is never reused');
    });
  });
}
