import assert from 'node:assert/strict';
import { StringDecoder } from 'node:string_decoder';
import { describe, it } from 'node:test';
import { SseParser, formatSseEvent, type SseEvent } from '../../core/protocol/sse.ts';

/** Each event's fields, and what is left, after feeding `chunks` to one parser. */
function parseAll(chunks: readonly (Buffer | string)[], parser = new SseParser()): { events: [string | null, string | null, string][]; rest: string } {
  const events: SseEvent[] = [];
  for (const chunk of chunks) events.push(...parser.push(chunk));
  return { events: events.map((e) => [e.id, e.event, e.data]), rest: parser.rest() };
}

/**
 * Counts, while `run` runs, the bytes handed to Buffer#indexOf from its start offset (what the
 * parser looks at) and the decodings of bytes into strings (Buffer#toString, StringDecoder#write).
 */
function countWork(run: () => void): { scanned: number; decoded: number } {
  const work = { scanned: 0, decoded: 0 };
  const { indexOf, toString } = Buffer.prototype;
  const { write } = StringDecoder.prototype;
  Buffer.prototype.indexOf = function (this: Buffer, value: never, from?: never, encoding?: never): number {
    work.scanned += this.length - (typeof from === 'number' ? from : 0);
    return indexOf.call(this, value, from, encoding);
  };
  Buffer.prototype.toString = function (this: Buffer, ...args: never[]): string {
    work.decoded++;
    return toString.apply(this, args);
  };
  StringDecoder.prototype.write = function (this: StringDecoder, buffer: never): string {
    work.decoded++;
    return write.call(this, buffer);
  };
  try {
    run();
  } finally {
    Buffer.prototype.indexOf = indexOf;
    Buffer.prototype.toString = toString;
    StringDecoder.prototype.write = write;
  }
  return work;
}

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

  it('ends events at every kind of blank line (\\n\\n, \\r\\r, \\r\\n\\r\\n and mixed), split at any byte', () => {
    const text = 'data: a\n\ndata: b\r\rdata: c\r\n\r\ndata: d\n\r\ndata: e\r\n\ndata: f\n\rdata: g\r\r\ndata: h';
    const expected = [['a'], ['b'], ['c'], ['d'], ['e'], ['f'], ['g']].map(([data]) => [null, null, data]);
    assert.deepEqual(parseAll([text]), { events: expected, rest: 'data: h' });
    const bytes = Buffer.from(text);
    for (let cut = 1; cut < bytes.length; cut++) {
      for (let second = cut + 1; second < bytes.length; second += 7) {
        assert.deepEqual(parseAll([bytes.subarray(0, cut), bytes.subarray(cut, second), bytes.subarray(second)]), { events: expected, rest: 'data: h' }, `cut at ${cut} and ${second}`);
      }
    }
    // One byte at a time.
    assert.deepEqual(parseAll([...bytes].map((byte) => Buffer.from([byte]))), { events: expected, rest: 'data: h' });
  });

  it('an event larger than its bound: dropped, the parser says so and takes nothing more; one at the bound passes', () => {
    const event = 'data: ' + 'x'.repeat(94) + '\n\n'; // 102 bytes
    assert.equal(parseAll([event], new SseParser(102)).events.length, 1);
    const parser = new SseParser(101);
    const events: SseEvent[] = [];
    for (let at = 0; at < event.length; at += 10) events.push(...parser.push(event.slice(at, at + 10)));
    assert.equal(events.length, 0);
    assert.equal(parser.tooLarge, true);
    assert.equal(parser.pendingBytes, 0, 'nothing of it is held');
    assert.deepEqual(parser.push('data: next\n\n'), []);
    // Events before the one too large still come out of the chunk that holds both.
    const mixed = new SseParser(64);
    assert.deepEqual(mixed.push('data: small\n\ndata: ' + 'y'.repeat(100)).map((e) => e.data), ['small']);
    assert.equal(mixed.tooLarge, true);
    // An event that never ends is held only up to the bound.
    const endless = new SseParser(1000);
    for (let i = 0; i < 100 && !endless.tooLarge; i++) endless.push('x'.repeat(64));
    assert.equal(endless.tooLarge, true);
  });

  it('looks at each byte of an event that never ends at most twice, and decodes nothing of it', () => {
    const parser = new SseParser();
    const chunk = Buffer.alloc(4096, 'x');
    const chunks = 2000;
    const work = countWork(() => {
      parser.push('event: message\ndata: ');
      for (let i = 0; i < chunks; i++) parser.push(chunk);
    });
    assert.ok(work.scanned <= 2 * (chunks * chunk.length + 64), `scanned ${work.scanned} bytes for ${chunks * chunk.length}`);
    assert.equal(work.decoded, 0, 'no string is made of an event before it ends');
    const end = countWork(() => assert.equal(parser.push('\n\n')[0]!.data.length, chunks * chunk.length));
    assert.equal(end.decoded, 1, 'the event is decoded once, when it ends');
  });

  it('ignores a byte order mark that opens the stream, even split across chunks, and only there', () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const parser = new SseParser();
    assert.deepEqual(parser.push(bom.subarray(0, 2)), []);
    const [first] = parser.push(Buffer.concat([bom.subarray(2), Buffer.from('event: endpoint\ndata: /messages\n\n')]));
    assert.equal(first!.event, 'endpoint');
    assert.equal(first!.data, '/messages');
    const [second] = parser.push(Buffer.concat([bom, Buffer.from('event: message\ndata: x\n\n')]));
    assert.equal(second!.event, null, 'a mark later is part of the line: its field is not "event"');
  });
});

