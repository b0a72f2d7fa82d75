/**
 * The line splitter of a child's output (core/upstream/stdio/line-splitter.ts): lines across
 * chunks, `\r\n`, UTF-8 split between chunks, the bound in both modes (a failure that holds
 * nothing more, a cut line), and time linear in the bytes of a long line.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LineSplitter, type Overflow } from '../../core/upstream/stdio/line-splitter.ts';

function splitter(max: number, overflow: Overflow = 'fail'): { s: LineSplitter; lines: [string, boolean][] } {
  const lines: [string, boolean][] = [];
  return { s: new LineSplitter(max, overflow, (line, cut) => lines.push([line, cut])), lines };
}

describe('LineSplitter', () => {
  it('gives each line of the chunks, wherever the chunks are cut, without \\n and a \\r before it', () => {
    const { s, lines } = splitter(100);
    for (const chunk of ['a', 'bc\nde', 'f\r\n\ng', 'h\r', '\n', 'i\rj\n']) assert.equal(s.push(Buffer.from(chunk)), true);
    assert.deepEqual(lines.map(([line]) => line), ['abc', 'def', '', 'gh', 'i\rj']);
    assert.equal(s.heldBytes, 0);
  });

  it('decodes a character whose UTF-8 bytes come in two chunks', () => {
    const { s, lines } = splitter(100);
    const bytes = Buffer.from('é€😀\n');
    for (let i = 0; i < bytes.length; i++) s.push(bytes.subarray(i, i + 1));
    assert.deepEqual(lines, [['é€😀', false]]);
  });

  it('gives an unfinished last line at the end of the stream', () => {
    const { s, lines } = splitter(100);
    s.push(Buffer.from('one\ntw'));
    s.push(Buffer.from('o'));
    s.end();
    assert.deepEqual(lines.map(([line]) => line), ['one', 'two']);
  });

  it('takes a line of the bound (with a \\r after it), and fails on one byte more', () => {
    const ok = splitter(8);
    assert.equal(ok.s.push(Buffer.from('12345678\r')), true);
    assert.equal(ok.s.push(Buffer.from('\n12345678\n')), true);
    assert.deepEqual(ok.lines.map(([line]) => line), ['12345678', '12345678']);
    for (const text of ['123456789\n', '12345678x\r\n']) {
      const tooLong = splitter(8);
      assert.equal(tooLong.s.push(Buffer.from(text)), false, text);
      assert.deepEqual(tooLong.lines, []);
    }
  });

  it('never holds more than the bound of a line that does not end, and holds nothing once failed', () => {
    const max = 64 * 1024;
    const { s, lines } = splitter(max);
    const chunk = Buffer.alloc(1000, 'x');
    let pushes = 0;
    while (s.push(chunk)) {
      pushes++;
      assert.ok(s.heldBytes <= max + 1, `holds ${s.heldBytes} bytes`);
    }
    assert.equal(pushes, Math.floor((max + 1) / 1000));
    assert.equal(s.heldBytes, 0);
    assert.equal(s.push(Buffer.from('fine\n')), false, 'a failed splitter stays failed');
    assert.deepEqual(lines, []);
  });

  it('in cut mode, gives the start of a long line, marked cut, and the lines after it whole', () => {
    const { s, lines } = splitter(4, 'cut');
    s.push(Buffer.from('abcdefgh\nij'));
    s.push(Buffer.from('klmnop'));
    s.push(Buffer.from('qr\nst\n'));
    s.push(Buffer.from('uvwxyz'));
    assert.ok(s.heldBytes <= 4);
    s.end();
    assert.deepEqual(lines, [['abcd', true], ['ijkl', true], ['st', false], ['uvwx', true]]);
  });

  it('stop drops what is held and ignores what comes after', () => {
    const { s, lines } = splitter(100);
    s.push(Buffer.from('held'));
    s.stop();
    assert.equal(s.heldBytes, 0);
    assert.equal(s.push(Buffer.from('\nmore\n')), false);
    assert.deepEqual(lines, []);
  });

  it('splits a long line arriving in small chunks in time linear in its bytes', () => {
    const bytes = 8 * 1024 * 1024;
    const { s, lines } = splitter(bytes);
    const chunk = Buffer.alloc(64, 'y');
    const started = performance.now();
    for (let sent = 0; sent < bytes; sent += chunk.length) s.push(chunk);
    s.push(Buffer.from('\n'));
    const ms = performance.now() - started;
    assert.equal(lines.length, 1);
    assert.equal(lines[0]![0].length, bytes);
    // 131072 chunks: a splitter that searched its held bytes again per chunk would take minutes.
    assert.ok(ms < 3_000, `took ${ms.toFixed(0)} ms`);
  });
});
