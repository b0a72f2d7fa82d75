/**
 * MemorySessionStore: sliding TTL, the LRU bound, and `onExpire` for sessions that expired or
 * were evicted (not for deleted or replaced ones). A test clock drives the TTL; one test uses
 * real time for the sweep timer.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemorySessionStore, type SessionEndReason } from '../../core/mcp/aggregate/memory-session-store.ts';
import { recordSize, type SessionRecord } from '../../core/mcp/aggregate/session-store.ts';
import { waitFor } from '../fixtures/processes.ts';
import { captureLog } from './helpers/log.ts';
import { sessionRecord } from './helpers/session.ts';

/** A store on a manual clock (no sweep timer), and what `onExpire` received. */
function manualStore(max: number, ttlMs: number) {
  const clock = { now: 1_000_000 }; // lru-cache treats a start time of 0 as "no TTL"
  const ended: [string, SessionEndReason][] = [];
  const store = new MemorySessionStore({
    max,
    ttlMs,
    sweepIntervalMs: 0,
    now: () => clock.now,
    onExpire: (record, reason) => ended.push([record.id, reason]),
  });
  return { store, ended, advance: (ms: number) => (clock.now += ms) };
}

describe('MemorySessionStore', () => {
  it('save / touch / delete round trip; unknown ids are absent', async () => {
    const { store, ended } = manualStore(10, 1_000);
    const record = sessionRecord('a');
    await store.save(record);
    assert.equal(await store.touch('a'), record);
    assert.equal(await store.touch('unknown'), null);
    await store.save({ ...record, missing: [] });
    assert.deepEqual((await store.touch('a'))?.missing, []);
    await store.delete('a');
    assert.equal(await store.touch('a'), null);
    await store.delete('a');
    assert.deepEqual(ended, [], 'replaced and deleted sessions are not reported');
    await store.close();
  });

  it('expires after the TTL without a touch, and reports it', async () => {
    const { store, ended, advance } = manualStore(10, 1_000);
    await store.save(sessionRecord('a'));
    advance(999);
    assert.notEqual(await store.touch('a'), null);
    advance(1_001);
    assert.equal(await store.touch('a'), null);
    assert.deepEqual(ended, [['a', 'expired']]);
    await store.close();
  });

  it('touch slides the TTL: alive long past the first expiry while touched', async () => {
    const { store, ended, advance } = manualStore(10, 1_000);
    await store.save(sessionRecord('a'));
    for (let i = 0; i < 5; i += 1) {
      advance(800);
      assert.notEqual(await store.touch('a'), null, `touch ${i} at ${(i + 1) * 800}ms`);
    }
    advance(1_001);
    assert.equal(await store.touch('a'), null);
    assert.deepEqual(ended, [['a', 'expired']]);
  });

  it('sweep() reports expired sessions nobody asks for again', async () => {
    const { store, ended, advance } = manualStore(10, 1_000);
    await store.save(sessionRecord('old'));
    advance(600);
    await store.save(sessionRecord('young'));
    advance(500);
    store.sweep();
    assert.deepEqual(ended, [['old', 'expired']]);
    assert.equal(store.size, 1);
  });

  it('keeps at most `max` sessions: the least recently touched is evicted and reported', async () => {
    const { store, ended } = manualStore(2, 60_000);
    await store.save(sessionRecord('a'));
    await store.save(sessionRecord('b'));
    await store.touch('a'); // b is now the least recently used
    await store.save(sessionRecord('c'));
    assert.deepEqual(ended, [['b', 'evicted']]);
    assert.equal(await store.touch('b'), null);
    assert.notEqual(await store.touch('a'), null);
    assert.notEqual(await store.touch('c'), null);
    assert.equal(store.size, 2);
  });

  it('the sweep timer reports an expired session on its own', async () => {
    const ended: SessionRecord[] = [];
    const store = new MemorySessionStore({ max: 10, ttlMs: 50, sweepIntervalMs: 20, onExpire: (record) => ended.push(record) });
    try {
      const record = sessionRecord();
      await store.save(record);
      await waitFor(() => ended.length === 1, 2_000, 10);
      assert.equal(ended[0], record);
    } finally {
      await store.close();
    }
  });

  it('a throwing onExpire is logged and does not break the store; close() reports nothing', async () => {
    const captured = captureLog();
    const store = new MemorySessionStore({
      max: 1,
      ttlMs: 60_000,
      log: captured.log,
      onExpire: () => {
        throw new Error('backend close failed');
      },
    });
    await store.save(sessionRecord('a'));
    await store.save(sessionRecord('b'));
    assert.notEqual(await store.touch('b'), null);
    assert.deepEqual(
      captured.lines().map((line) => [line.msg, line.error, line.reason]),
      [['session onExpire callback failed', 'backend close failed', 'evicted']],
    );
    await store.close();
    assert.equal(store.size, 0);
    assert.equal(captured.lines().length, 1, 'close() did not call onExpire');
  });

  it('refuses a non-positive max or ttlMs', () => {
    assert.throws(() => new MemorySessionStore({ max: 0, ttlMs: 1_000 }), /max must be a positive whole number \(got 0\)/);
    assert.throws(() => new MemorySessionStore({ max: 10, ttlMs: 1.5 }), /ttlMs must be a positive whole number \(got 1.5\)/);
  });

  it('holds at most maxPerOwner sessions per owner: a new one ends that owner\'s oldest, never another owner\'s', async () => {
    const ended: string[] = [];
    const store = new MemorySessionStore({ max: 100, maxPerOwner: 2, ttlMs: 60_000, sweepIntervalMs: 0, onExpire: (record) => ended.push(record.id) });
    const alice = { issuer: 'https://a.example', subject: 'alice' };
    const bob = { issuer: 'https://a.example', subject: 'bob' };
    assert.deepEqual(await store.save(sessionRecord('b1', { owner: bob })), []);
    assert.deepEqual(await store.save(sessionRecord('a1', { owner: alice })), []);
    assert.deepEqual(await store.save(sessionRecord('a2', { owner: alice })), []);
    assert.deepEqual(await store.save(sessionRecord('a2', { owner: alice, missing: [] })), [], 'replacing a session is not a new one');
    const removed = await store.save(sessionRecord('a3', { owner: alice }));
    assert.deepEqual(removed.map((r) => r.id), ['a1'], 'alice\'s oldest, returned to the caller');
    assert.equal(await store.touch('a1'), null);
    assert.notEqual(await store.touch('b1'), null, 'bob is untouched');
    await store.delete('a2');
    assert.deepEqual(await store.save(sessionRecord('a4', { owner: alice })), [], 'a deleted session frees its place');
    for (let i = 0; i < 5; i++) await store.save(sessionRecord(`anon${i}`, { owner: null }));
    assert.equal(store.size, 8, 'anonymous sessions are bounded only by max');
    assert.deepEqual(ended, [], 'owner evictions are the caller\'s to report');
    assert.throws(() => new MemorySessionStore({ max: 1, maxPerOwner: 0, ttlMs: 1 }), /maxPerOwner must be a positive whole number/);
    await store.close();
  });

  it('holds at most maxBytesPerOwner bytes of an owner\'s records: a new one ends that owner\'s oldest until they fit, never the new one, nor another owner\'s', async () => {
    const padded = (id: string, owner: SessionRecord['owner'], bytes: number): SessionRecord => sessionRecord(id, { owner, clientCapabilities: { experimental: { pad: 'x'.repeat(bytes) } } });
    const size = recordSize(padded('a1', { issuer: 'https://a.example', subject: 'alice' }, 10_000));
    const store = new MemorySessionStore({ max: 100, maxBytesPerOwner: 3 * size, ttlMs: 60_000, sweepIntervalMs: 0 });
    const alice = { issuer: 'https://a.example', subject: 'alice' };
    const bob = { issuer: 'https://a.example', subject: 'bob' };
    assert.deepEqual(await store.save(padded('b1', bob, 10_000)), []);
    for (const id of ['a1', 'a2', 'a3']) assert.deepEqual(await store.save(padded(id, alice, 10_000)), []);
    assert.equal(store.bytesOf(alice), 3 * size);
    assert.deepEqual((await store.save(padded('a4', alice, 10_000))).map((r) => r.id), ['a1'], 'alice\'s oldest, returned to the caller');
    assert.deepEqual((await store.save(padded('a5', alice, 18_000))).map((r) => r.id), ['a2', 'a3'], 'as many of the oldest as it takes');
    assert.ok(store.bytesOf(alice) <= 3 * size);
    assert.deepEqual((await store.save(padded('a6', alice, 40_000))).map((r) => r.id), ['a4', 'a5'], 'a session larger than the budget ends every older one');
    assert.notEqual(store.touch('a6'), null, 'and stands itself');
    assert.notEqual(store.touch('b1'), null, 'bob is untouched');
    assert.equal(store.bytesOf(bob), recordSize(padded('b1', bob, 10_000)));
    // A record that changes (a backend joined) is counted anew; a deleted one frees its bytes.
    await store.update({ ...padded('a6', alice, 40_000), missing: [] });
    assert.equal(store.bytesOf(alice), recordSize({ ...padded('a6', alice, 40_000), missing: [] }));
    await store.delete('a6');
    assert.equal(store.bytesOf(alice), 0);
    assert.throws(() => new MemorySessionStore({ max: 1, maxBytesPerOwner: 0, ttlMs: 1 }), /maxBytesPerOwner must be a positive whole number/);
    await store.close();
  });
});
