/**
 * The official Python MCP client (`mcp` 2.3) with its own OAuth support against the embedded
 * authorization server, in both protocol generations: 401 → RFC 9728 → RFC 8414 → dynamic
 * registration → authorize with PKCE and `resource` → the upstream login (a headless browser
 * here) → token → tools/call. The Python client is skipped when it is not installed
 * (test/helpers/python-client.ts), and fails under CI=true.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { freePort } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { pythonClient, runPythonClient, type PythonMode } from '../helpers/python-client.ts';
import { skipIf } from '../store/helpers/service.ts';
import { Browser } from './helpers/browser.ts';
import { USER } from './helpers/setup.ts';
import { startUpstreamIdp, type UpstreamIdp } from './helpers/upstream-idp.ts';

/** The redirect URI test/python/mcp_client.py registers. */
const REDIRECT = 'http://127.0.0.1:7777/callback';

describe('embedded authorization server: the Python MCP client logs in and calls a tool', () => {
  let idp: UpstreamIdp;
  let backend: SdkServer;
  let gateway: RunningVmcp;
  let origin: string;

  before(async () => {
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    idp = await startUpstreamIdp({ user: USER, redirectUri: `${origin}/oauth/callback`, clientSecret: 'corp-secret' });
    backend = await startSdkServer({ name: 'echo' });
    gateway = await startTestGateway({
      port,
      backends: [{ name: 'echo', url: backend.url }],
      incomingAuth: `  incomingAuth:\n    type: oidc\n    resourceUrl: "${origin}/mcp"\n    oidcConfig: {type: inline, inline: {issuer: "${origin}", clientId: vmcp, audience: "${origin}/mcp"}}`,
      spec:
        `  authServerConfig:\n    issuer: "${origin}"\n    upstreamProviders:\n` +
        `      - {name: corp, type: oidc, oidcConfig: {issuerUrl: "${idp.issuer}", clientId: gatehouse, clientSecretRef: {name: corp, key: secret}, scopes: [openid, profile, email]}}`,
      documents: 'apiVersion: v1\nkind: Secret\nmetadata: {name: corp}\nstringData: {secret: corp-secret}',
    });
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
    await idp.close();
  });

  for (const mode of ['legacy', '2026-07-28'] as const satisfies readonly PythonMode[]) {
    it(`${mode === 'legacy' ? '2025-11-25 (a session)' : '2026-07-28 (stateless)'}: 401 → discovery → registration → login → token → tools/call`, async (t) => {
      const found = pythonClient('the Python MCP client with OAuth');
      if (skipIf(t, 'skip' in found ? found : null) || !('python' in found)) return;
      const browser = new Browser();
      const logins = idp.logins;
      const outcomes = await runPythonClient(found.python, `${origin}/mcp`, mode, [{ op: 'era' }, { op: 'call', tool: 'echo', args: { text: 'hello from Python' } }], {
        oauth: async (authorization) => {
          const url = new URL(authorization);
          assert.equal(url.origin + url.pathname, `${origin}/oauth/authorize`, 'the authorization endpoint the metadata names');
          assert.equal(url.searchParams.get('resource'), `${origin}/mcp`, 'RFC 8707: the MCP endpoint is the resource');
          assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
          const visit = await browser.visit(authorization, (at) => at.href.startsWith(REDIRECT));
          assert.ok(visit.url.href.startsWith(REDIRECT), `stopped at ${visit.url.href} (${visit.status}): ${visit.body.slice(0, 300)}`);
          return visit.url.href;
        },
      });
      assert.equal(idp.logins, logins + 1, 'the user logged in at the upstream provider once');
      assert.deepEqual(outcomes[0], { ok: true, value: mode === 'legacy' ? 'legacy' : 'modern', version: mode === 'legacy' ? '2025-11-25' : '2026-07-28' });
      const called = outcomes[1];
      assert.ok(called?.ok === true, JSON.stringify(outcomes));
      assert.match(JSON.stringify(called.value), /echo: hello from Python/);
    });
  }
});
