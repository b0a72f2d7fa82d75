import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { multiplexEventId, parseEventId, routedEventId, unwrapRequestId, wrapRequestId } from '../../core/mcp/aggregate/ids.ts';
import { templatePattern } from '../../core/mcp/aggregate/lists.ts';

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
    assert.deepEqual(parseEventId(routedEventId(2, 'abc.def')), { kind: 'routed', backendIndex: 2, eventId: 'abc.def' });
    const positions = new Map([[0, 'e-1'], [2, 'e-9']]);
    const parsed = parseEventId(multiplexEventId(positions));
    assert.equal(parsed?.kind, 'multiplex');
    assert.deepEqual(parsed?.kind === 'multiplex' ? [...parsed.positions] : null, [[0, 'e-1'], [2, 'e-9']]);
    assert.equal(parseEventId('m.not-base64-json'), null);
    assert.equal(parseEventId('no-dot'), null);
  });

  it('resource templates match concrete URIs', () => {
    assert.ok(templatePattern('fixture://alpha/item/{id}').test('fixture://alpha/item/42'));
    assert.ok(!templatePattern('fixture://alpha/item/{id}').test('fixture://alpha/item/42/more'));
    assert.ok(templatePattern('file:///{+path}').test('file:///a/b/c.txt'));
    assert.ok(!templatePattern('demo://x.y/{id}').test('demo://xzy/1'), 'dots are literal');
  });
});
