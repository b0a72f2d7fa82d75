import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isHeaderNamed, moveLast, removeHeader } from '../../core/base/header-list.ts';

describe('header names in any letter case', () => {
  it('isHeaderNamed: the name as written, or lowered, is the lower-case name', () => {
    assert.equal(isHeaderNamed('content-type', 'content-type'), true);
    assert.equal(isHeaderNamed('Content-Type', 'content-type'), true);
    assert.equal(isHeaderNamed('CONTENT-TYPE', 'content-type'), true);
    assert.equal(isHeaderNamed('content-typ', 'content-type'), false, 'shorter');
    assert.equal(isHeaderNamed('content-types', 'content-type'), false, 'longer');
    assert.equal(isHeaderNamed('content_type', 'content-type'), false, 'an underscore is another name here');
    // A name the parser built from bytes (not a literal of the source) compares alike.
    assert.equal(isHeaderNamed(Buffer.from('mcp-session-id').toString('latin1'), 'mcp-session-id'), true);
    assert.equal(isHeaderNamed(Buffer.from('Mcp-Session-ID').toString('latin1'), 'mcp-session-id'), true);
    // ASCII case only: what is one bit from a letter but not its capital, and what lowers to ASCII beyond it, is another name.
    assert.equal(isHeaderNamed('content\rtype', 'content-type'), false, 'CR is not a capital hyphen');
    assert.equal(isHeaderNamed('@', '`'), false, 'the capital of no letter');
    assert.equal(isHeaderNamed('[]', '{}'), false, 'nor is [ the capital of {');
    assert.equal(isHeaderNamed('\u212Aeep-alive', 'keep-alive'), false, 'the Kelvin sign lowers to k, but is no ASCII capital');
    assert.equal(isHeaderNamed('DATE', 'date'), true);
  });

  it('removeHeader drops every copy, whatever its case, and keeps the rest in order', () => {
    const list = ['Keep-Alive', '1', 'accept', '*/*', 'keep-alive', '2', 'KEEP-ALIVE', '3', 'x-keep-alive', '4'];
    removeHeader(list, 'keep-alive');
    assert.deepEqual(list, ['accept', '*/*', 'x-keep-alive', '4']);
  });
});

describe('moveLast: the request id goes last again after the hooks, when it is still where it was put', () => {
  it('moves it past what hooks added after it, and leaves a list whose hooks moved, removed or replaced it as they left it', () => {
    const added = ['accept', 'a', 'x-request-id', 'r1', 'authorization', 'Bearer t'];
    moveLast(added, 2, 'x-request-id');
    assert.deepEqual(added, ['accept', 'a', 'authorization', 'Bearer t', 'x-request-id', 'r1']);
    const last = ['accept', 'a', 'x-request-id', 'r1'];
    moveLast(last, 2, 'x-request-id');
    assert.deepEqual(last, ['accept', 'a', 'x-request-id', 'r1']);
    const removed = ['accept', 'a', 'authorization', 'Bearer t'];
    moveLast(removed, 2, 'x-request-id');
    assert.deepEqual(removed, ['accept', 'a', 'authorization', 'Bearer t'], 'a hook removed it: nothing moves, nothing comes back');
    const shifted = ['x-request-id', 'r1', 'authorization', 'Bearer t'];
    moveLast(shifted, 2, 'x-request-id');
    assert.deepEqual(shifted, ['x-request-id', 'r1', 'authorization', 'Bearer t'], 'a hook removed a header before it: another pair is at its place, nothing moves');
  });
});

describe('moveLast when a hook repeated the header', () => {
  it('leaves two copies in their order: the gateway\'s first, the hook\'s after it', () => {
    const list = ['accept', 'a', 'x-request-id', 'r1', 'x-request-id', 'hook', 'authorization', 'Bearer t'];
    moveLast(list, 2, 'x-request-id');
    assert.deepEqual(list, ['accept', 'a', 'x-request-id', 'r1', 'x-request-id', 'hook', 'authorization', 'Bearer t']);
  });
});
