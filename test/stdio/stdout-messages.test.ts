/**
 * The messages of a child's stdout lines (core/upstream/stdio/stdout-messages.ts): one message or
 * a batch per line, each checked; blank lines ignored; a line that is not JSON-RPC logged and
 * skipped, and more than 64 of them within 10 s the reason to end the child.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonRpcMessage } from '../../core/protocol/jsonrpc.ts';
import { INVALID_LINES_LIMIT, INVALID_LINES_WINDOW_MS, StdoutMessages } from '../../core/upstream/stdio/stdout-messages.ts';
import { captureLog } from '../store/helpers/log.ts';

function reader(clock = { now: 0 }): { messages: JsonRpcMessage[]; read: StdoutMessages; logged: ReturnType<typeof captureLog> } {
  const messages: JsonRpcMessage[] = [];
  const logged = captureLog();
  return { messages, logged, read: new StdoutMessages('fx', logged.log, (m) => messages.push(m), () => clock.now) };
}

const FLOOD = `was ended: it wrote more than 64 lines that are not JSON-RPC to stdout within 10 s`;

describe('StdoutMessages', () => {
  it('delivers a message, and a batch message by message; ignores blank lines', () => {
    const { messages, read } = reader();
    assert.equal(read.line('{"jsonrpc":"2.0","id":1,"result":{}}'), null);
    assert.equal(read.line('[{"jsonrpc":"2.0","method":"notifications/progress","params":{}},{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"no"}}]'), null);
    assert.equal(read.line(''), null);
    assert.equal(read.line(' \t '), null);
    assert.deepEqual(messages, [
      { jsonrpc: '2.0', id: 1, result: {} },
      { jsonrpc: '2.0', method: 'notifications/progress', params: {} },
      { jsonrpc: '2.0', id: 'a', error: { code: -1, message: 'no' } },
    ]);
    assert.equal(read.invalidLines, 0);
  });

  it('logs and skips a line that is not JSON-RPC (its first 200 characters, with the backend), and the bad part of a batch', () => {
    const { messages, read, logged } = reader();
    const long = 'x'.repeat(1000);
    for (const line of [long, '{"jsonrpc":"1.0","id":1,"result":{}}', '[]', '[{"jsonrpc":"2.0","id":2,"result":1},{"id":3}]', '"text"']) assert.equal(read.line(line), null);
    assert.deepEqual(messages, [{ jsonrpc: '2.0', id: 2, result: 1 }]);
    assert.equal(read.invalidLines, 5);
    const warnings = logged.lines().filter((l) => l['level'] === 40);
    assert.equal(warnings.length, 5);
    assert.deepEqual(warnings.map((w) => w['backend']), ['fx', 'fx', 'fx', 'fx', 'fx']);
    assert.equal(warnings[0]!['line'], 'x'.repeat(200));
    assert.deepEqual(warnings.map((w) => w['problem']), ['not JSON', 'jsonrpc must be "2.0"', 'an empty batch', 'batch element 1: jsonrpc must be "2.0"', 'a JSON-RPC message must be an object']);
  });

  it(`tolerates ${INVALID_LINES_LIMIT} lines that are not JSON-RPC within ${INVALID_LINES_WINDOW_MS / 1000} s, and ends the child at one more`, () => {
    const clock = { now: 1_000 };
    const { read } = reader(clock);
    for (let i = 0; i < INVALID_LINES_LIMIT; i++) {
      assert.equal(read.line(`noise ${i}`), null);
      clock.now += 100;
    }
    assert.equal(read.line('one too many'), FLOOD);
  });

  it('does not end a child whose lines that are not JSON-RPC are spread over more than the window', () => {
    const clock = { now: 0 };
    const { read } = reader(clock);
    const step = Math.ceil(INVALID_LINES_WINDOW_MS / INVALID_LINES_LIMIT);
    for (let i = 0; i < 5 * INVALID_LINES_LIMIT; i++) {
      assert.equal(read.line(`noise ${i}`), null, `line ${i}`);
      clock.now += step;
    }
  });

  it('skips a message nested more than 256 levels deep, as an SSE backend\'s is (the gateway writes messages anew, and JSON.stringify runs out of stack)', () => {
    const { messages, read } = reader();
    const nested = (depth: number) => `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":${'['.repeat(depth)}${']'.repeat(depth)}}}`;
    assert.equal(read.line(nested(100_000)), null);
    assert.equal(read.line(nested(300)), null);
    assert.equal(messages.length, 0, 'neither reaches the gateway');
    assert.equal(read.invalidLines, 2);
    assert.equal(read.line(nested(200)), null);
    assert.equal(messages.length, 1, 'one within the bound passes');
  });
});
