import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sharedCapabilities, sharedVersion } from '../../core/mcp/aggregate/shared-declarations.ts';
import { AggregatedSession } from '../../core/mcp/aggregate/session.ts';

describe('what sessions hold alike, held once', () => {
  it('equal capabilities (by their JSON) are one frozen object; different ones are not merged', () => {
    const first = sharedCapabilities({ tools: { listChanged: true }, experimental: { x: { y: 1 } } });
    const second = sharedCapabilities({ tools: { listChanged: true }, experimental: { x: { y: 1 } } });
    assert.equal(first, second);
    assert.ok(Object.isFrozen(first) && Object.isFrozen(first['tools']) && Object.isFrozen((first['experimental'] as { x: object }).x));
    assert.throws(() => {
      (first as Record<string, unknown>)['logging'] = {};
    }, TypeError);
    const other = sharedCapabilities({ tools: {} });
    assert.notEqual(other, first);
    assert.deepEqual(other, { tools: {} });
  });

  it('a backend declaring something new at every initialize cannot grow the table: past its bound, capabilities are kept as given', () => {
    let last: Readonly<Record<string, unknown>> | null = null;
    for (let i = 0; i < 300; i++) last = sharedCapabilities({ experimental: { n: i } });
    const again = { experimental: { n: 299 } };
    assert.equal(sharedCapabilities(again), again, 'not shared: the table is full');
    assert.equal(Object.isFrozen(again), false);
    assert.deepEqual(last, again);
  });

  it("a version the gateway speaks is the gateway's own string; another stays as it came", () => {
    const parsed = JSON.parse('"2025-11-25"') as string;
    assert.equal(sharedVersion(parsed), '2025-11-25');
    assert.equal(sharedVersion('1999-01-01'), '1999-01-01');
  });
});

describe('an idle session holds no per-use maps until used', () => {
  const record = { v: 2, id: 's', owner: null, createdAt: 0, protocolVersion: '2025-11-25', clientCapabilities: {}, clientInfo: null, backends: { a: { sessionId: 'x', protocolVersion: '2025-11-25', capabilities: {} }, constructor: { sessionId: 'y', protocolVersion: '2025-11-25', capabilities: {} } }, missing: [] } as never;

  it('looks its backends up in the record, by own name only, and the Map it makes agrees', () => {
    const session = new AggregatedSession(record);
    assert.equal(session.usable('a')?.sessionId, 'x');
    assert.equal(session.usable('constructor')?.sessionId, 'y');
    assert.equal(session.usable('toString'), undefined, 'no name from the prototype');
    assert.equal(session.has('hasOwnProperty'), false);
    assert.deepEqual([...session.backends.keys()], ['a', 'constructor']);
    const joined = { sessionId: 'z', protocolVersion: '2025-11-25', capabilities: {} };
    session.joined('b', joined);
    assert.equal(session.usable('b'), joined);
    assert.equal(session.backends.get('b'), joined);
    session.markLost('b', joined);
    assert.equal(session.usable('b'), undefined);
    assert.equal(session.has('b'), false);
  });

  it('a backend that joins before the Map is made is found through the record', () => {
    const session = new AggregatedSession(record);
    const joined = { sessionId: 'z', protocolVersion: '2025-11-25', capabilities: {} };
    session.joined('b', joined);
    assert.equal(session.usable('b'), joined);
    assert.equal(session.backends.get('b'), joined);
  });

  it('listens are added and removed; a session without any shares an empty set nobody can write', () => {
    const session = new AggregatedSession(record);
    assert.equal(session.listens.size, 0);
    const listen = { ctx: null, deliver: () => undefined, backendJoined: () => undefined, opening: () => null, close: () => undefined } as never;
    session.addListen(listen);
    assert.equal(session.listens.size, 1);
    session.removeListen(listen);
    assert.equal(session.listens.size, 0);
    assert.equal(new AggregatedSession(record).listens.size, 0);
  });
});
