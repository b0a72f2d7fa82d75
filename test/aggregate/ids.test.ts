import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { multiplexEventId, parseEventId, routedEventId, unwrapRequestId, wrapRequestId } from '../../core/mcp/aggregate/ids.ts';

describe('aggregated ids', () => {
  it('server→client request ids keep the backend and the original id and type', () => {
    for (const [index, id] of [[0, 7], [3, 'abc'], [12, 'g1~n5'], [1, 0], [2, '']] as const) {
      const wrapped = wrapRequestId(index, id);
      assert.deepEqual(unwrapRequestId(wrapped), { backendIndex: index, id });
    }
    assert.notEqual(wrapRequestId(0, 1), wrapRequestId(1, 1), 'the same id from two backends never collides');
    assert.notEqual(wrapRequestId(0, 1), wrapRequestId(0, '1'));
    assert.equal(unwrapRequestId(5), null);
    assert.equal(unwrapRequestId('client-id'), null);
  });

  it('event ids route a resumption to one backend, or to every backend where it was', () => {
    assert.deepEqual(parseEventId(routedEventId(2, 'abc.def')), { kind: 'routed', backendIndex: 2, eventId: 'abc.def', ticket: null });
    // With a ticket (resume-tickets.ts: base64url payload ~ 22-character MAC) before the backend's id.
    const ticket = `${Buffer.from('["n1",7,1]').toString('base64url')}~${'A'.repeat(22)}`;
    assert.equal(routedEventId(2, 'abc.def', ticket), `2~${ticket}.abc.def`);
    assert.deepEqual(parseEventId(routedEventId(2, 'abc.def', ticket)), { kind: 'routed', backendIndex: 2, eventId: 'abc.def', ticket });
    const positions = new Map([[0, 'e-1'], [2, 'e-9']]);
    const parsed = parseEventId(multiplexEventId(positions));
    assert.equal(parsed?.kind, 'multiplex');
    assert.deepEqual(parsed?.kind === 'multiplex' ? [...parsed.positions] : null, [[0, 'e-1'], [2, 'e-9']]);
    assert.equal(parseEventId('m.not-base64-json'), null);
    assert.equal(parseEventId('no-dot'), null);
  });

  it('refuses event ids it could not have issued: control characters, characters past ASCII, a bad index', () => {
    for (const position of ['x\r\nx-injected: yes', 'x\u0000', 'x\u010d\u010a', '', 'x'.repeat(257)]) {
      assert.equal(parseEventId(multiplexEventId(new Map([[0, position]]))), null, JSON.stringify(position));
      assert.equal(parseEventId(routedEventId(0, position)), null, JSON.stringify(position));
    }
    assert.equal(parseEventId('m.' + Buffer.from('[[-1,"a"]]').toString('base64url')), null);
    assert.equal(parseEventId('m.' + Buffer.from('[[0,"a","extra"]]').toString('base64url')), null);
    assert.equal(parseEventId('1e3.abc'), null);
    assert.equal(parseEventId('1234567.abc'), null);
    // A ticketed id with a position it could not have issued, or a ticket of another form.
    const ticket = `abc~${'A'.repeat(22)}`;
    assert.equal(parseEventId(`0~${ticket}.x\r\nx-injected: yes`), null);
    assert.equal(parseEventId(`0~${ticket}.`), null);
    assert.equal(parseEventId(`0~abc~${'A'.repeat(21)}.e1`), null);
    assert.equal(parseEventId(`0~a.b~${'A'.repeat(22)}.e1`), null);
  });
});
