/**
 * SessionRequestLimit: counted per session and principal. A principal that learned another's
 * session id fills only its own count; what leaves is what entered; nothing is kept for a
 * session once its last request has left.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Principal } from '../../core/plugin-api/context.ts';
import { SessionRequestLimit } from '../../core/server/session-request-limit.ts';

const alice = new Principal('alice', {}, null, 'https://id.example');
const mallory = new Principal('mallory', {}, null, 'https://id.example');

describe('SessionRequestLimit', () => {
  it('refuses the request past max, and counts again once one has left', () => {
    const limit = new SessionRequestLimit(2);
    assert.equal(limit.enter('s1', alice.key), true);
    assert.equal(limit.enter('s1', alice.key), true);
    assert.equal(limit.enter('s1', alice.key), false, 'a third in flight');
    assert.equal(limit.enter('s2', alice.key), true, 'another session is counted apart');
    limit.leave('s1', alice.key);
    assert.equal(limit.enter('s1', alice.key), true);
    assert.equal(limit.sessions, 2);
  });

  it("another principal naming the session fills its own count, never the owner's, in either order", () => {
    const limit = new SessionRequestLimit(1);
    assert.equal(limit.enter('s1', mallory.key), true);
    assert.equal(limit.enter('s1', mallory.key), false);
    assert.equal(limit.enter('s1', alice.key), true, 'the owner is not locked out by the first comer');
    assert.equal(limit.enter('s1', ''), true, 'nor is an anonymous caller counted with either');
    assert.equal(limit.sessions, 3);
    limit.leave('s1', mallory.key);
    assert.equal(limit.enter('s1', alice.key), false, "alice's own count stands after mallory's left");
    assert.equal(limit.enter('s1', mallory.key), true);
  });

  it('the same principal on another Principal object (another connection) shares the count', () => {
    const limit = new SessionRequestLimit(1);
    const again = new Principal('alice', {}, null, 'https://id.example');
    assert.equal(limit.enter('s1', alice.key), true);
    assert.equal(limit.enter('s1', again.key), false);
    assert.notEqual(new Principal('alice', {}, null, 'https://other.example').key, alice.key, 'an issuer is part of who');
    assert.notEqual(new Principal('alice', {}, null, null).key, '', 'a principal without issuer is not anonymous');
  });

  it('forgets a session once its last request left; a leave that never entered changes nothing', () => {
    const limit = new SessionRequestLimit(1);
    limit.leave('s1', alice.key);
    assert.equal(limit.sessions, 0);
    assert.equal(limit.enter('s1', alice.key), true);
    assert.equal(limit.enter('s1', mallory.key), true);
    limit.leave('s1', 'nobody');
    limit.leave('s1', alice.key);
    limit.leave('s1', alice.key);
    assert.equal(limit.sessions, 1);
    limit.leave('s1', mallory.key);
    assert.equal(limit.sessions, 0);
    for (const who of [alice.key, mallory.key]) assert.equal(limit.enter('s1', who), true, 'counts start from nothing again');
  });
});
