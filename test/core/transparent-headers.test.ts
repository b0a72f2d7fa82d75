/**
 * The transparent path's filter of a backend's response headers (core/mcp/pipe.ts): what is
 * dropped, found by its name in any letter case without lowering it, what is kept in order, and
 * the stream headers an SSE answer gets when the backend did not send its own.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { forwardHeaders, droppedHeaders } from '../../core/mcp/pipe.ts';
import { startsWithHeaderName } from '../../core/base/header-list.ts';

const DROPPED = droppedHeaders(['connection', 'keep-alive', 'transfer-encoding', 'te', 'x-request-id']);

describe('a backend\'s response headers on the transparent path', () => {
  it('drops hop-by-hop, request-id and CORS headers in any letter case, and keeps the rest in order', () => {
    const { list, sse, contentType } = forwardHeaders(
      [
        'Connection', 'keep-alive', 'KEEP-ALIVE', 'timeout=5', 'Transfer-Encoding', 'chunked', 'TE', 'trailers', 'X-Request-ID', 'b-1',
        'Access-Control-Allow-Origin', '*', 'access-control-expose-headers', 'x', 'ACCESS-CONTROL-MAX-AGE', '1',
        'Content-Type', 'application/json', 'Mcp-Session-Id', 's', 'Date', 'd', 'tx', 'kept', 'Connections', 'kept too', 'access-control', 'kept as well',
      ],
      DROPPED,
    );
    assert.deepEqual(list, ['Content-Type', 'application/json', 'Mcp-Session-Id', 's', 'Date', 'd', 'tx', 'kept', 'Connections', 'kept too', 'access-control', 'kept as well']);
    assert.equal(sse, false);
    assert.equal(contentType, 'application/json');
  });

  it('adds the stream headers to an SSE answer unless the backend sent its own, whatever their case', () => {
    assert.deepEqual(forwardHeaders(['content-type', 'text/event-stream'], DROPPED).list, ['content-type', 'text/event-stream', 'x-accel-buffering', 'no', 'cache-control', 'no-cache, no-transform']);
    const own = forwardHeaders(['CONTENT-TYPE', 'text/event-stream', 'Cache-Control', 'no-store', 'X-Accel-Buffering', 'yes'], DROPPED);
    assert.deepEqual(own.list, ['CONTENT-TYPE', 'text/event-stream', 'Cache-Control', 'no-store', 'X-Accel-Buffering', 'yes']);
    assert.equal(own.sse, true);
  });

  it('startsWithHeaderName: a prefix in any ASCII letter case, and nothing shorter', () => {
    assert.equal(startsWithHeaderName('Access-Control-Allow-Origin', 'access-control-'), true);
    assert.equal(startsWithHeaderName('access-control-', 'access-control-'), true);
    assert.equal(startsWithHeaderName('access-control', 'access-control-'), false);
    assert.equal(startsWithHeaderName('access_control-x', 'access-control-'), false);
  });
});
