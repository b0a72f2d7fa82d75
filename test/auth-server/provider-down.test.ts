/**
 * An upstream identity provider that cannot be reached when the gateway starts does not keep the
 * gateway from starting: the start logs it, a login meanwhile goes back to the client with
 * `temporarily_unavailable` (nothing kept), and once the provider answers, the next login
 * discovers it and goes through.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { freePort } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { captureLog, type CapturedLog } from '../store/helpers/log.ts';
import { Browser } from './helpers/browser.ts';
import { ClientFlows, REDIRECT, startYamlGateway } from './helpers/flows.ts';
import { USER } from './helpers/setup.ts';
import { startUpstreamIdp, type UpstreamIdp } from './helpers/upstream-idp.ts';

describe('embedded authorization server: an upstream provider down at start', () => {
  let backend: SdkServer;
  let gateway: RunningVmcp;
  let idp: UpstreamIdp | null = null;
  let idpPort: number;
  let issuer: string;
  let log: CapturedLog;

  before(async () => {
    const port = await freePort();
    idpPort = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    backend = await startSdkServer({ name: 'echo' });
    log = captureLog('info');
    gateway = await startYamlGateway({ port, backendUrl: backend.url, idpIssuer: `http://127.0.0.1:${idpPort}`, storage: '{type: memory}', persistentKeys: true, log });
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
    await idp?.close();
  });

  it('the gateway starts and says so; a login meanwhile is temporarily_unavailable; once the provider is up, logins work', async () => {
    assert.ok(log.lines().some((l) => /upstream provider corp could not be discovered; logins try again/.test(String(l.msg))), log.text());
    const flows = new ClientFlows(issuer);
    const clientId = await flows.register();
    const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
    const query = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state: 'down' });
    const visit = await new Browser().visit(`${issuer}/oauth/authorize?${query}`, (url) => url.href.startsWith(REDIRECT));
    assert.equal(visit.url.searchParams.get('error'), 'temporarily_unavailable', visit.trail.join('\n'));
    assert.match(visit.url.searchParams.get('error_description') ?? '', /corp cannot be reached now/);
    assert.equal(visit.url.searchParams.get('state'), 'down');

    idp = await startUpstreamIdp({ user: USER, redirectUri: `${issuer}/oauth/callback`, clientSecret: 'corp-secret', port: idpPort });
    // A failed discovery is tried again after 5 s at the earliest.
    await new Promise((resolve) => setTimeout(resolve, 5_100));
    const tokens = await flows.login(clientId);
    assert.equal(await flows.mcpStatus(tokens.access), 200);
    assert.equal(idp.logins, 1);
  });
});
