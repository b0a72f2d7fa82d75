/**
 * LazyEventEmitter (core/http/wire/lazy-emitter.ts): an EventEmitter whose constructor makes
 * nothing. What a plugin may do with the own server's request or response as an emitter works as
 * on node's: listeners in order, once, removal, counts, an unhandled 'error' thrown, events.once.
 */
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { describe, it } from 'node:test';
import { LazyEventEmitter } from '../../core/http/wire/lazy-emitter.ts';

class Thing extends LazyEventEmitter {
  readonly name = 'thing';
}

describe('LazyEventEmitter', () => {
  it('makes no emitter field until the first listener, and is an EventEmitter', () => {
    const thing = new Thing();
    assert.ok(thing instanceof EventEmitter);
    assert.deepEqual(Object.keys(thing), ['name']);
    assert.equal(thing.emit('close'), false);
    assert.equal(thing.listenerCount('close'), 0);
    assert.deepEqual(thing.eventNames(), []);
    assert.equal(thing.getMaxListeners(), EventEmitter.defaultMaxListeners);
    thing.removeListener('close', () => undefined);
    thing.removeAllListeners();
    assert.deepEqual(Object.keys(thing), ['name'], 'reading and removing make nothing either');
  });

  it('calls listeners in order, once ones once, and forgets removed ones', () => {
    const thing = new Thing();
    const seen: string[] = [];
    const second = (v: string): number => seen.push(`second ${v}`);
    thing.on('data', (v: string) => seen.push(`first ${v}`));
    thing.on('data', second);
    thing.once('data', (v: string) => seen.push(`once ${v}`));
    assert.equal(thing.listenerCount('data'), 3);
    assert.equal(thing.emit('data', 'a'), true);
    thing.removeListener('data', second);
    thing.emit('data', 'b');
    assert.deepEqual(seen, ['first a', 'second a', 'once a', 'first b']);
    assert.deepEqual(thing.eventNames(), ['data']);
  });

  it('throws an error emitted with no listener, and gives it to one', () => {
    const thing = new Thing();
    assert.throws(() => thing.emit('error', new Error('boom')), /boom/);
    let told: Error | null = null;
    thing.on('error', (err: Error) => (told = err));
    thing.emit('error', new Error('told'));
    assert.equal((told as Error | null)?.message, 'told');
  });

  it('serves events.once, and keeps each instance its own listeners', async () => {
    const a = new Thing();
    const b = new Thing();
    a.on('x', () => undefined);
    assert.equal(b.listenerCount('x'), 0);
    const waited = once(b, 'ready');
    b.emit('ready', 42);
    assert.deepEqual(await waited, [42]);
  });
});
