/**
 * The one reading of a backend's answer (core/upstream/answer-reader.ts): what the head is, and
 * the bounds of the body, for every exchange that reads messages.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AnswerReader, ERROR_BODY_LIMIT, readAnswerHead } from '../../core/upstream/answer-reader.ts';

test('the head: media types as MCP reads them, in any case and with parameters', () => {
  const kind = (type: string): string => readAnswerHead(200, ['Content-Type', type]).kind;
  assert.equal(kind('text/event-stream'), 'events');
  assert.equal(kind('Text/Event-Stream; charset=utf-8'), 'events');
  assert.equal(kind('application/json'), 'json');
  assert.equal(kind('APPLICATION/JSON;charset=UTF-8'), 'json');
  assert.equal(kind('application/problem+json'), 'json');
  assert.equal(kind('text/event-streamx'), 'other');
  assert.equal(kind('application/jsonp'), 'other');
  assert.equal(kind('text/html'), 'other');
  assert.equal(readAnswerHead(204, []).kind, 'other');
  assert.equal(readAnswerHead(204, []).mediaType, '');
  // Sent twice: joined, as a client reads them, and neither kind; the same one twice is one.
  const twice = readAnswerHead(200, ['content-type', 'application/json', 'Content-Type', 'text/plain']);
  assert.deepEqual([twice.kind, twice.mediaType], ['other', 'application/json, text/plain']);
  assert.equal(readAnswerHead(200, ['content-type', 'text/event-stream', 'content-type', 'text/event-stream']).kind, 'events');
});

test('the head: the session id, and an encoding other than identity', () => {
  const head = readAnswerHead(200, ['MCP-Session-Id', 'abc', 'Content-Encoding', ' GZIP ', 'content-type', 'application/json']);
  assert.equal(head.sessionId, 'abc');
  assert.equal(head.encoding, 'gzip');
  assert.equal(readAnswerHead(200, ['content-encoding', 'identity']).encoding, null);
  assert.equal(readAnswerHead(200, ['x-other', 'v']).sessionId, null);
});

const events = (status: number): AnswerReader => new AnswerReader(readAnswerHead(status, ['content-type', 'text/event-stream']), 64, false);

test('an event stream in a 2xx is read event by event, across chunks', () => {
  const reader = events(200);
  assert.equal(reader.events, true);
  assert.deepEqual(reader.push(Buffer.from('data: {"a"')), []);
  const read = reader.push(Buffer.from(':1}\n\n'));
  assert.ok(Array.isArray(read));
  assert.equal((read as { data: string }[])[0]!.data, '{"a":1}');
});

test('one event past the bound stops the reading, naming the event', () => {
  const reader = new AnswerReader(readAnswerHead(200, ['content-type', 'text/event-stream']), 64, true);
  assert.equal(reader.push(Buffer.from('data: ' + 'x'.repeat(100))), 'an event');
  assert.deepEqual(reader.push(Buffer.from('\n\n')), [], 'nothing more is taken');
});

test("an answer's events summed are bounded, a standing stream's are not", () => {
  const event = Buffer.from('data: ' + 'x'.repeat(20) + '\n\n');
  const answer = events(200);
  assert.ok(Array.isArray(answer.push(event)));
  assert.ok(Array.isArray(answer.push(event)));
  assert.equal(answer.push(event), 'an answer');
  const standing = new AnswerReader(readAnswerHead(200, ['content-type', 'text/event-stream']), 64, true);
  for (let i = 0; i < 10; i++) assert.ok(Array.isArray(standing.push(event)));
});

test('a JSON body is held whole up to the bound, whatever the status', () => {
  for (const status of [200, 400, 500]) {
    const reader = new AnswerReader(readAnswerHead(status, ['content-type', 'application/json']), 64, false);
    assert.equal(reader.events, false);
    reader.push(Buffer.from('{"jsonrpc":'));
    reader.push(Buffer.from('"2.0"}'));
    assert.equal(reader.body().toString(), '{"jsonrpc":"2.0"}');
    const big = new AnswerReader(readAnswerHead(status, ['content-type', 'application/json']), 64, false);
    assert.equal(big.push(Buffer.alloc(65, 32)), 'an answer');
    assert.equal(big.body().length, 0, 'nothing is held past the bound');
  }
});

test("a refusal's body that is not JSON keeps its first 16 KiB and reads on, up to the bound", () => {
  const reader = new AnswerReader(readAnswerHead(502, ['content-type', 'text/html']), 64 * 1024, false);
  for (let i = 0; i < 40; i++) assert.deepEqual(reader.push(Buffer.alloc(1024, 65)), []);
  assert.equal(reader.size, 40 * 1024);
  assert.equal(reader.body().length, ERROR_BODY_LIMIT);
  const endless = new AnswerReader(readAnswerHead(502, ['content-type', 'text/html']), 64 * 1024, true);
  let read: unknown = [];
  for (let i = 0; i < 65 && Array.isArray(read); i++) read = endless.push(Buffer.alloc(1024, 65));
  assert.equal(read, 'an answer', 'an endless error page ends, even on a standing stream');
  const stream = new AnswerReader(readAnswerHead(500, ['content-type', 'text/event-stream']), 64, false);
  assert.equal(stream.events, false, 'a refusal is read as a body, even as an event stream');
});

test('anything else in a 2xx is held whole up to the bound', () => {
  const reader = new AnswerReader(readAnswerHead(202, []), 64, false);
  assert.deepEqual(reader.push(Buffer.alloc(10)), []);
  assert.equal(reader.body().length, 10);
  assert.equal(new AnswerReader(readAnswerHead(200, ['content-type', 'text/plain']), 64, false).push(Buffer.alloc(65)), 'an answer');
});
