import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SseParser, formatSseEvent } from '../../core/mcp/sse.ts';

describe('SseParser', () => {
  it('parses events with id, event type and multi-line data', () => {
    const parser = new SseParser();
    const events = parser.push('id: 7\nevent: message\ndata: {"a":1}\n\ndata: line1\ndata: line2\n\n');
    assert.equal(events.length, 2);
    assert.deepEqual([events[0]!.id, events[0]!.event, events[0]!.data], ['7', 'message', '{"a":1}']);
    assert.equal(events[1]!.data, 'line1\nline2');
    assert.equal(events[0]!.raw, 'id: 7\nevent: message\ndata: {"a":1}\n\n');
  });

  it('joins events split at any byte, including inside a UTF-8 character and between \\r and \\n', () => {
    const text = 'event: message\r\ndata: {"text":"héllo ✓"}\r\n\r\n: keep-alive\r\n\r\n';
    const bytes = Buffer.from(text);
    for (let cut = 1; cut < bytes.length; cut++) {
      const parser = new SseParser();
      const events = [...parser.push(bytes.subarray(0, cut)), ...parser.push(bytes.subarray(cut))];
      assert.equal(events.length, 2, `cut at ${cut}`);
      assert.equal(events[0]!.data, '{"text":"héllo ✓"}', `cut at ${cut}`);
      assert.equal(events[1]!.data, '', 'a comment block has no data');
    }
  });

  it('keeps an unterminated event for rest()', () => {
    const parser = new SseParser();
    assert.deepEqual(parser.push('data: partial'), []);
    assert.equal(parser.rest(), 'data: partial');
  });

  it('round-trips through formatSseEvent', () => {
    const block = formatSseEvent({ id: 'e1', event: 'message', data: 'a\nb' });
    assert.equal(block, 'event: message\nid: e1\ndata: a\ndata: b\n\n');
    const [event] = new SseParser().push(block);
    assert.deepEqual([event!.id, event!.event, event!.data], ['e1', 'message', 'a\nb']);
  });
});
