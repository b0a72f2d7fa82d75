import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { multiplexEventId, parseEventId, routedEventId, unwrapRequestId, wrapRequestId } from '../../core/mcp/aggregate/ids.ts';
import { implicitSessionId } from '../../core/mcp/aggregate/implicit-session.ts';
import type { Principal } from '../../core/plugin-api/context.ts';

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

describe('implicit session ids (implicit-session.ts)', () => {
  const alice = { issuer: 'https://idp.example', subject: 'alice' } as Principal;
  const bob = { issuer: 'https://idp.example', subject: 'bob' } as Principal;
  const capabilities = { elicitation: { form: {} }, sampling: {} };

  it('derives the same id whether the capabilities\' JSON comes with the request or is written here, and another one for another principal or other capabilities', () => {
    const written = implicitSessionId(alice, capabilities);
    assert.match(written, /^m\.[A-Za-z0-9_-]{43}$/);
    assert.equal(implicitSessionId(alice, capabilities, JSON.stringify(capabilities)), written);
    assert.equal(implicitSessionId(alice, { ...capabilities }), written, 'a copy declares the same');
    assert.notEqual(implicitSessionId(bob, capabilities, JSON.stringify(capabilities)), written);
    assert.notEqual(implicitSessionId(null, capabilities), written);
    assert.notEqual(implicitSessionId(alice, { sampling: {} }), written);
    assert.notEqual(implicitSessionId(alice, { sampling: {}, elicitation: { form: {} } }), written, 'another order of keys is another declaration');
  });

  it('gives the same ids after its memory was emptied for being full', () => {
    const first = implicitSessionId(alice, capabilities);
    for (let i = 0; i < 10_050; i++) implicitSessionId({ issuer: 'https://idp.example', subject: `user-${i}` } as Principal, capabilities);
    assert.equal(implicitSessionId(alice, capabilities), first);
    assert.equal(implicitSessionId(alice, capabilities, JSON.stringify(capabilities)), first);
  });
});
