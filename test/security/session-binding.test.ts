/**
 * An aggregated session belongs to the principal (issuer + subject) that created it: another
 * principal presenting its id — to call, list, stream or DELETE — is told there is no such
 * session, exactly as for an id that never existed, and the owner's session is untouched. Session
 * ids never appear in the log above debug.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { waitFor } from '../fixtures/processes.ts';
import { INITIALIZE, post } from '../helpers/gateway.ts';
import { startOidcGateway, type OidcGateway } from '../incoming-auth/helpers/oidc-gateway.ts';
import { ownedBy } from '../../core/mcp/aggregate/session-store.ts';
import { captureLog, type CapturedLog } from '../store/helpers/log.ts';
import { sessionRecord } from '../store/helpers/session.ts';

describe('aggregated sessions are bound to their principal', () => {
  let oidc: OidcGateway;
  let gateway: RunningVmcp;
  let captured: CapturedLog;
  let alice: string;
  let mallory: string;
  let session: string;

  before(async () => {
    captured = captureLog('info');
    oidc = await startOidcGateway({ backends: [{ name: 'alpha' }, { name: 'beta' }], spec: '  server: {accessLog: true}', log: captured.log });
    gateway = oidc.gateway;
    alice = await oidc.bearer('alice');
    mallory = await oidc.bearer('mallory');
    const init = await post(gateway.url, INITIALIZE, { authorization: alice });
    assert.equal(init.status, 200);
    session = init.headers.get('mcp-session-id')!;
  });
  after(() => oidc.stop());

  const call = (authorization: string, id: string, body: object) => post(gateway.url, JSON.stringify({ jsonrpc: '2.0', ...body }), { authorization, 'mcp-session-id': id });

  async function assertUnknownTo(authorization: string, id: string): Promise<void> {
    for (const body of [
      { id: 1, method: 'tools/list' },
      { id: 2, method: 'tools/call', params: { name: 'alpha_echo', arguments: { text: 'x' } } },
      { method: 'notifications/cancelled', params: { requestId: 1 } },
    ]) {
      const res = await call(authorization, id, body);
      assert.equal(res.status, 404, JSON.stringify(body));
      assert.match(JSON.stringify(res.json), /Session not found/);
    }
    const stream = await fetch(gateway.url, { headers: { authorization, 'mcp-session-id': id, accept: 'text/event-stream' } });
    assert.equal(stream.status, 404);
    await stream.body?.cancel();
    const deleted = await fetch(gateway.url, { method: 'DELETE', headers: { authorization, 'mcp-session-id': id } });
    assert.equal(deleted.status, 404);
  }

  it('answers another principal with the same 404 as an unknown session', async () => {
    await assertUnknownTo(mallory, session);
    const stranger = await call(mallory, 'no-such-session-id-0000000000000000', { id: 1, method: 'tools/list' });
    assert.equal(stranger.status, 404);
  });

  it('still serves the owner afterwards: the other principal\'s DELETE ended nothing', async () => {
    const listed = await call(alice, session, { id: 3, method: 'tools/list' });
    assert.equal(listed.status, 200);
    assert.ok(((listed.json as { result: { tools: unknown[] } }).result.tools.length) > 0);
  });

  it('binds to the issuer too: the same subject from another issuer is a stranger', () => {
    const record = sessionRecord('s1', { owner: { issuer: 'https://a.example', subject: 'alice' } });
    assert.equal(ownedBy(record, { issuer: 'https://a.example', subject: 'alice' }), true);
    assert.equal(ownedBy(record, { issuer: 'https://b.example', subject: 'alice' }), false);
    assert.equal(ownedBy(record, { issuer: 'https://a.example', subject: 'alice2' }), false);
    assert.equal(ownedBy(record, null), false, 'an anonymous caller is nobody\'s owner');
    assert.equal(ownedBy(sessionRecord('s2', { owner: null }), null), true, 'an anonymous gateway\'s sessions');
    assert.equal(ownedBy(sessionRecord('s3', { owner: null }), { issuer: null, subject: 'x' }), false);
  });

  it('keeps session ids out of the log at info and above', async () => {
    await call(alice, session, { id: 4, method: 'tools/list' });
    assert.ok(captured.lines().length > 0, 'the access log wrote lines');
    assert.ok(!captured.text().includes(session), 'no session id in the log');
  });
});

describe('sessions per principal', () => {
  let oidc: OidcGateway;
  before(async () => {
    oidc = await startOidcGateway({ backends: [{ name: 'alpha' }, { name: 'beta' }], config: 'session: {maxSessionsPerPrincipal: 2}' });
  });
  after(() => oidc.stop());

  it('a principal that opens more than maxSessionsPerPrincipal ends its own oldest session, and nobody else\'s', async () => {
    const { gateway, backends } = oidc;
    const alpha = backends[0]!;
    const [alice, bob] = [await oidc.bearer('alice'), await oidc.bearer('bob')];
    const open = async (authorization: string) => (await post(gateway.url, INITIALIZE, { authorization })).headers.get('mcp-session-id')!;
    const list = async (authorization: string, session: string) =>
      (await post(gateway.url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), { authorization, 'mcp-session-id': session })).status;
    const bobs = await open(bob);
    const first = await open(alice);
    const deletesBefore = alpha.received.filter((r) => r.method === 'DELETE').length;
    await open(alice);
    await open(alice);
    assert.equal(await list(alice, first), 404, 'alice\'s oldest session ended');
    assert.equal(await list(bob, bobs), 200, 'bob\'s session lives on');
    await waitFor(() => alpha.received.filter((r) => r.method === 'DELETE').length > deletesBefore, 5_000);
  });
});
