import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isHeaderNamed, removeHeader } from '../../core/base/header-list.ts';

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
  });

  it('removeHeader drops every copy, whatever its case, and keeps the rest in order', () => {
    const list = ['Keep-Alive', '1', 'accept', '*/*', 'keep-alive', '2', 'KEEP-ALIVE', '3', 'x-keep-alive', '4'];
    removeHeader(list, 'keep-alive');
    assert.deepEqual(list, ['accept', '*/*', 'x-keep-alive', '4']);
  });
});
