/**
 * The tickets that say which response a resumed request stream may carry
 * (core/mcp/aggregate/resume-tickets.ts): sealed over the session, the backend and the request,
 * readable by any replica sharing the key, and a delivery claimed once.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { LocalRelay } from '../../core/mcp/aggregate/relay.ts';
import { ResumeTickets } from '../../core/mcp/aggregate/resume-tickets.ts';

/** Replicas sharing a key and a claim (as Redis gives them), each with its own tickets. */
function replicas(): [ResumeTickets, ResumeTickets] {
  const key = randomBytes(32);
  const shared = new LocalRelay();
  const relay = { key, claim: (name: string, ttlMs: number) => Promise.resolve(shared.claim(name, ttlMs)) };
  return [new ResumeTickets(relay), new ResumeTickets(relay)];
}

describe('resume tickets', () => {
  it('one replica reads what another issued, for that session, backend and request only', () => {
    const [a, b] = replicas();
    for (const id of [7, 0, 'abc', '', 'ключ']) {
      const ticket = a.issue('s1', 'ask', id)!;
      assert.match(ticket.token, /^[A-Za-z0-9_-]+~[A-Za-z0-9_-]{22}$/);
      assert.deepEqual(b.open('s1', 'ask', ticket.token), ticket);
      assert.equal(b.open('s2', 'ask', ticket.token), null, 'another session');
      assert.equal(b.open('s1', 'other', ticket.token), null, 'another backend');
    }
    assert.notEqual(a.issue('s1', 'ask', 7)!.nonce, a.issue('s1', 'ask', 7)!.nonce, 'each answer its own');
    assert.equal(a.issue('s1', 'ask', null), null);
    assert.equal(a.issue('s1', 'ask', 'x'.repeat(400)), null, 'an id too long to carry');
    // Not issued here: another key, an edited payload, garbage.
    const [elsewhere] = replicas();
    const token = a.issue('s1', 'ask', 7)!.token;
    assert.equal(elsewhere.open('s1', 'ask', token), null);
    const [payload, mac] = token.split('~') as [string, string];
    const [nonce, , expiry] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as [string, number, number];
    assert.equal(b.open('s1', 'ask', `${Buffer.from(JSON.stringify([nonce, 8, expiry])).toString('base64url')}~${mac}`), null);
    for (const bad of ['', '~', 'abc', `~${mac}`, `${payload}~`, `${payload}~${mac}x`.slice(0, -2)]) assert.equal(b.open('s1', 'ask', bad), null, bad);
  });

  it('expires', (t) => {
    const [a] = replicas();
    const ticket = a.issue('s1', 'ask', 7)!;
    t.mock.method(Date, 'now', () => ticket.expires + 1);
    assert.equal(a.open('s1', 'ask', ticket.token), null);
    assert.equal(a.claim(ticket), false);
  });

  it('a delivery is claimed once among the replicas; one delivered on its own stream is not claimed again here', async () => {
    const [a, b] = replicas();
    const ticket = a.issue('s1', 'ask', 7)!;
    const opened = b.open('s1', 'ask', ticket.token)!;
    assert.equal(await b.claim(opened), true);
    assert.equal(b.claim(opened), false, 'at once, this replica knows');
    assert.equal(await a.claim(ticket), false, 'the other asks the shared claim');

    const delivered = a.issue('s1', 'ask', 8)!;
    a.delivered(delivered);
    assert.equal(a.claim(delivered), false);

    // With the memory store (one process, LocalRelay) the answer is at once.
    const local = new ResumeTickets(new LocalRelay());
    const mine = local.issue('s1', 'ask', 9)!;
    assert.equal(local.claim(mine), true);
    assert.equal(local.claim(mine), false);
  });
});
