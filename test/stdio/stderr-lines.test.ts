/**
 * A child's stderr in the log (core/upstream/stdio/stderr-lines.ts): each line an entry with the
 * backend's name and the child's pid, cut at 4 KiB, at most 100 lines per 10 s and one entry
 * counting the rest, and an unfinished last line logged at the end.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { STDERR_LINE_BYTES, STDERR_LINES_PER_WINDOW, STDERR_WINDOW_MS, StderrLines } from '../../core/upstream/stdio/stderr-lines.ts';
import { captureLog } from '../store/helpers/log.ts';

describe('StderrLines', () => {
  it('logs each line with the backend and the pid, and the unfinished last line at the end', () => {
    const { log, lines } = captureLog();
    const stderr = new StderrLines(log, 'fx', 4242);
    stderr.push(Buffer.from('starting\r\nlisten'));
    stderr.push(Buffer.from('ing on stdio\nbye'));
    stderr.end();
    assert.deepEqual(
      lines().map((l) => [l['msg'], l['backend'], l['backendPid'], l['stream'], l['cut']]),
      [
        ['starting', 'fx', 4242, 'stderr', undefined],
        ['listening on stdio', 'fx', 4242, 'stderr', undefined],
        ['bye', 'fx', 4242, 'stderr', undefined],
      ],
    );
  });

  it('logs a line without its control characters (CR, NUL, a terminal escape): the pretty log goes to terminals', () => {
    const { log, lines } = captureLog();
    const stderr = new StderrLines(log, 'fx', 1);
    stderr.push(Buffer.from('\x1b[2J\x1b[31mred\rovertyped\0end\n'));
    stderr.end();
    const [line] = lines();
    assert.doesNotMatch(String(line!['msg']), /[\x00-\x1f\x7f]/);
    assert.match(String(line!['msg']), /red overtyped end/);
  });

  it(`cuts a line at ${STDERR_LINE_BYTES} bytes and says so`, () => {
    const { log, lines } = captureLog();
    const stderr = new StderrLines(log, 'fx', 1);
    stderr.push(Buffer.from('a'.repeat(10_000) + '\nshort\n'));
    stderr.end();
    const [cut, short] = lines();
    assert.equal(cut!['msg'], 'a'.repeat(STDERR_LINE_BYTES));
    assert.equal(cut!['cut'], true);
    assert.equal(short!['msg'], 'short');
  });

  it(`logs ${STDERR_LINES_PER_WINDOW} lines per ${STDERR_WINDOW_MS / 1000} s and counts the rest in one entry`, () => {
    const { log, lines } = captureLog();
    const clock = { now: 0 };
    const stderr = new StderrLines(log, 'fx', 1, () => clock.now);
    stderr.push(Buffer.from('line\n'.repeat(250)));
    clock.now += STDERR_WINDOW_MS;
    stderr.push(Buffer.from('next window\n'));
    stderr.push(Buffer.from('line\n'.repeat(120)));
    stderr.end();
    const entries = lines();
    const summaries = entries.filter((l) => l['dropped'] !== undefined);
    assert.deepEqual(summaries.map((s) => s['dropped']), [150, 21]);
    assert.match(String(summaries[0]!['msg']), /^150 lines of backend "fx"'s stderr were dropped: at most 100 are logged per 10 s$/);
    assert.equal(entries.filter((l) => l['dropped'] === undefined).length, 2 * STDERR_LINES_PER_WINDOW);
    assert.equal(entries[STDERR_LINES_PER_WINDOW]!['dropped'], 150, 'the count comes before the next window\'s lines');
  });

  it('says how many were dropped when the window ends, even if the child is silent after', async () => {
    const { log, lines } = captureLog();
    let now = 0;
    const stderr = new StderrLines(log, 'fx', 1, () => now);
    stderr.push(Buffer.from('line\n'.repeat(STDERR_LINES_PER_WINDOW)));
    now = STDERR_WINDOW_MS - 20;
    stderr.push(Buffer.from('late\n'.repeat(4)));
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(lines().filter((l) => l['dropped'] !== undefined).map((l) => l['dropped']), [4]);
  });
});
