/**
 * /status (backends, their URLs and last errors, session count) and /metrics are not for anyone:
 * on the public port they need the same incoming auth as the MCP endpoint; with `server.admin`
 * they answer on a listener of their own (loopback, no auth, its own Host check) and the public
 * port no longer serves them. /healthz and /readyz stay public everywhere.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { formatProblems } from '../../core/config/problems.ts';
import { validateVmcpFile } from '../../core/config/vmcp-config.ts';
import { startTestGateway, vmcpYaml, writeConfig } from '../helpers/gateway.ts';
import { rawExchange, rawRequestBytes } from '../helpers/raw-http.ts';
import { challengeParams } from '../incoming-auth/helpers/gateway.ts';
import { startOidcGateway, type OidcGateway } from '../incoming-auth/helpers/oidc-gateway.ts';
import { startIssuer, type TestIssuer } from '../registry/helpers/issuer.ts';
import { providersYaml, startTestRegistry, type TestRegistry } from '../registry/helpers/registry.ts';

describe('the admin documents on the public port of an oidc gateway', () => {
  let oidc: OidcGateway;
  before(async () => {
    oidc = await startOidcGateway();
  });
  after(() => oidc.stop());

  it('401 with the challenge for /status and /metrics without a token; 200 with one', async () => {
    const { gateway, backends } = oidc;
    for (const path of ['/status', '/metrics']) {
      const anonymous = await fetch(new URL(path, gateway.url));
      assert.equal(anonymous.status, 401, path);
      assert.equal(challengeParams(anonymous.headers.get('www-authenticate') ?? undefined).error, 'invalid_request');
      assert.ok(!(await anonymous.text()).includes(backends[0]!.url), 'no backend URL leaks');
      const authorized = await fetch(new URL(path, gateway.url), { headers: { authorization: await oidc.bearer() } });
      assert.equal(authorized.status, 200, path);
      await authorized.text();
    }
  });

  it('keeps /healthz and /readyz public', async () => {
    for (const path of ['/healthz', '/readyz']) assert.equal((await fetch(new URL(path, oidc.gateway.url))).status, 200, path);
  });
});

describe('the admin documents on the public port of an anonymous gateway', () => {
  let backend: SdkServer;
  let gateway: RunningVmcp;
  before(async () => {
    backend = await startSdkServer({ name: 'alpha' });
    gateway = await startTestGateway({ backends: [{ name: 'alpha', url: backend.url }] });
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
  });

  it('refuses a Host or Origin that is not the gateway\'s (DNS rebinding), as the MCP endpoint does', async () => {
    for (const path of ['/status', '/metrics']) {
      const rebound = await rawExchange(gateway.url, rawRequestBytes('GET', new URL(path, gateway.url).href, [['host', 'attacker.example'], ['connection', 'close']]));
      assert.equal(rebound.status, 403, path);
      const browser = await fetch(new URL(path, gateway.url), { headers: { origin: 'http://attacker.example' } });
      assert.equal(browser.status, 403, path);
      assert.equal((await fetch(new URL(path, gateway.url))).status, 200, path);
    }
  });
});

describe('server.admin: a listener of its own', () => {
  let backend: SdkServer;
  let gateway: RunningVmcp;
  let admin: string;
  before(async () => {
    backend = await startSdkServer({ name: 'alpha' });
    gateway = await startTestGateway({ backends: [{ name: 'alpha', url: backend.url }], spec: '  server: {admin: {port: 0}}' });
    const address = gateway.server.adminAddress!;
    assert.equal(address.address, '127.0.0.1', 'loopback by default');
    admin = `http://127.0.0.1:${address.port}`;
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
  });

  it('serves /status, /metrics and the probes there, without auth', async () => {
    const status = await fetch(`${admin}/status`);
    assert.equal(status.status, 200);
    assert.equal(((await status.json()) as { mode: string }).mode, 'transparent');
    const metrics = await fetch(`${admin}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(await metrics.text(), /gatehouse_requests_total/);
    for (const path of ['/healthz', '/readyz']) assert.equal((await fetch(`${admin}${path}`)).status, 200);
    const other = await fetch(`${admin}/mcp`);
    assert.equal(other.status, 404, 'nothing else: not the MCP endpoint');
  });

  it('no longer serves /status and /metrics on the public port', async () => {
    for (const path of ['/status', '/metrics']) assert.equal((await fetch(new URL(path, gateway.url))).status, 404, path);
    assert.equal((await fetch(new URL('/healthz', gateway.url))).status, 200);
  });

  it('refuses a Host that is not its own, and any browser Origin (DNS rebinding of a loopback port)', async () => {
    const rebound = await rawExchange(admin, rawRequestBytes('GET', `${admin}/status`, [['host', 'attacker.example'], ['connection', 'close']]));
    assert.equal(rebound.status, 403);
    const browser = await fetch(`${admin}/status`, { headers: { origin: 'https://attacker.example' } });
    assert.equal(browser.status, 403);
  });
});

describe('the registry\'s /metrics in oauth mode', () => {
  let provider: TestIssuer;
  let registry: TestRegistry;
  before(async () => {
    provider = await startIssuer('registry');
    registry = await startTestRegistry(providersYaml([{ name: 'corp', issuer: provider.url }]));
  });
  after(async () => {
    await registry.stop();
    await provider.close();
  });

  it('needs a token; the probes do not', async () => {
    assert.equal((await registry.request('GET', '/metrics')).status, 401);
    assert.equal((await registry.request('GET', '/metrics', { token: await provider.token({ sub: 'ops' }) })).status, 200);
    assert.equal((await registry.request('GET', '/healthz')).status, 200);
  });
});

describe('server.admin in the config', () => {
  it('names the YAML path of a bad address or port', async () => {
    const file = await writeConfig(vmcpYaml({ backends: [{ name: 'alpha', url: 'http://127.0.0.1:9/mcp' }], spec: '  server: {admin: {address: "127.0.0.1:9464", port: 70000}}' }));
    const result = await validateVmcpFile(file);
    assert.equal(result.ok, false);
    const text = result.ok ? '' : formatProblems(result.problems);
    assert.match(text, /spec\.server\.admin\.address: must be an IP address or a host name to listen on, without a port/);
    assert.match(text, /spec\.server\.admin\.port: /);
  });
});
