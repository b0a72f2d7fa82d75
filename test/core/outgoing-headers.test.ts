import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OutgoingHeaders } from '../../core/plugin-api/outgoing-headers.ts';

describe('OutgoingHeaders', () => {
  it('sets, replaces, reads and deletes headers in the flat list', () => {
    const headers = new OutgoingHeaders(['accept', 'application/json']);
    headers.set('authorization', 'Bearer a');
    headers.set('authorization', 'Bearer b');
    assert.equal(headers.get('authorization'), 'Bearer b');
    assert.deepEqual(headers.list, ['accept', 'application/json', 'authorization', 'Bearer b']);
    headers.delete('accept');
    assert.deepEqual(headers.list, ['authorization', 'Bearer b']);
  });

  it('replaces every copy of a header a client sent more than once (none of its copies stays next to the credential)', () => {
    const headers = new OutgoingHeaders(['x-api-key', 'attacker-1', 'accept', 'application/json', 'x-api-key', 'attacker-2']);
    headers.set('x-api-key', 'gateway-key');
    assert.deepEqual(headers.list, ['accept', 'application/json', 'x-api-key', 'gateway-key']);
    headers.list.push('x-b', '1', 'x-b', '2');
    headers.delete('x-b');
    assert.deepEqual(headers.list, ['accept', 'application/json', 'x-api-key', 'gateway-key']);
  });

  it('refuses a value that would inject headers, and a name that is not a lower-case token', () => {
    const headers = new OutgoingHeaders([]);
    assert.throws(() => headers.set('authorization', 'Bearer x\r\nx-admin: true'), /CR, LF and NUL are not allowed/);
    assert.throws(() => headers.set('authorization', 'Bearer x\nx'), /not allowed/);
    assert.throws(() => headers.set('x-a', 'v\0'), /not allowed/);
    assert.throws(() => headers.set('Authorization', 'x'), /lower-case token/);
    assert.throws(() => headers.set('bad name', 'x'), /lower-case token/);
    assert.deepEqual(headers.list, [], 'nothing was set');
  });

  it('checks every name and value that is not the last one found safe, whatever was set before', () => {
    const headers = new OutgoingHeaders([]);
    headers.set('authorization', 'Bearer ok');
    headers.set('authorization', 'Bearer ok');
    assert.throws(() => headers.set('authorization', 'Bearer ok\r\nx-admin: true'), /not allowed/);
    assert.throws(() => headers.set('', 'Bearer ok'), /lower-case token/, 'the empty name');
    headers.set('x-a', '');
    assert.throws(() => headers.set('Authorization', ''), /lower-case token/);
    assert.throws(() => headers.set('x-a', '\0'), /not allowed/);
    headers.set('x-a', 'Bearer ok');
    assert.throws(() => headers.set('x-a', 'Bearer ok\n'), /not allowed/);
    assert.deepEqual(headers.list, ['authorization', 'Bearer ok', 'x-a', 'Bearer ok']);
  });
});
