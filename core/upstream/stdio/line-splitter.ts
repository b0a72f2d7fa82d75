/**
 * Lines out of a child's output stream (its stdout messages, its stderr log lines): chunks in,
 * each line out as a string without its `\n` (and without a `\r` before it), bounded.
 *
 * A line may hold `maxLineBytes` bytes. Past that the splitter either fails (`fail`: stdout,
 * where a longer line ends the child) or cuts it (`cut`: stderr, where the first bytes are kept
 * and the rest of the line is dropped). Either way it never holds more than the bound (and the
 * unread tail of the chunk it was handed last).
 *
 * Each byte is looked at once: a chunk is searched for `\n` from where the last search stopped,
 * and the bytes held of an unfinished line are joined only when its end arrives.
 */
import { Buffer } from 'node:buffer';
const NEWLINE = 0x0a;
const CR = 0x0d;

export type Overflow = 'fail' | 'cut';

/** Called for each line: `cut` when the line was longer than the bound and only its start is given. */
export type OnLine = (line: string, cut: boolean) => void;

export class LineSplitter {
  readonly #max: number;
  readonly #overflow: Overflow;
  readonly #onLine: OnLine;
  /** The start of the unfinished line, as pieces of the chunks it came in. */
  #held: Buffer[] = [];
  #heldBytes = 0;
  /** `cut` mode: the unfinished line passed the bound; its bytes up to the next `\n` are dropped. */
  #cutting = false;
  #failed = false;

  constructor(maxLineBytes: number, overflow: Overflow, onLine: OnLine) {
    this.#max = maxLineBytes;
    this.#overflow = overflow;
    this.#onLine = onLine;
  }

  /** Bytes held of the unfinished line (at most the bound, and one `\r`). */
  get heldBytes(): number {
    return this.#heldBytes;
  }

  /**
   * Splits one chunk. Returns false when a line grew past the bound in `fail` mode (or after
   * `stop`): the splitter then drops what it held and ignores what it is given after.
   */
  push(chunk: Buffer): boolean {
    if (this.#failed) return false;
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE); end !== -1; end = chunk.indexOf(NEWLINE, start)) {
      if (!this.#finish(chunk.subarray(start, end))) return this.#fail();
      if (this.#failed) return false;
      start = end + 1;
    }
    if (start < chunk.length && !this.#hold(chunk.subarray(start))) return this.#fail();
    return true;
  }

  /** Drops what is held and ignores what comes after (the reader of the lines is done with them). */
  stop(): void {
    this.#fail();
  }

  /** The stream ended: an unfinished last line is given as it is (if it is within the bound). */
  end(): void {
    if (this.#failed || (this.#heldBytes === 0 && !this.#cutting)) return;
    this.#finish(Buffer.alloc(0));
  }

  /** The line that `tail` ends (the bytes before it are held): given out, or false when too long in `fail` mode. */
  #finish(tail: Buffer): boolean {
    if (this.#cutting) {
      this.#give(Buffer.concat(this.#held), true);
      return true;
    }
    const bytes = this.#heldBytes + tail.length;
    if (bytes > this.#max + 1) return this.#overflowed(tail);
    const line = this.#heldBytes === 0 ? tail : Buffer.concat([...this.#held, tail], bytes);
    const length = line.length > 0 && line[line.length - 1] === CR ? line.length - 1 : line.length;
    if (length > this.#max) return this.#overflowed(tail);
    this.#give(line.subarray(0, length), false);
    return true;
  }

  /** Holds the start of an unfinished line, within the bound (plus a `\r` that may come before its `\n`). */
  #hold(piece: Buffer): boolean {
    if (this.#cutting) return true;
    if (this.#heldBytes + piece.length <= this.#max + 1) {
      this.#held.push(piece);
      this.#heldBytes += piece.length;
      return true;
    }
    if (this.#overflow === 'fail') return false;
    this.#keepStart(piece);
    this.#cutting = true;
    return true;
  }

  /** A line passed the bound: `fail` mode fails; `cut` mode gives its start. */
  #overflowed(tail: Buffer): boolean {
    if (this.#overflow === 'fail') return false;
    this.#keepStart(tail);
    this.#give(Buffer.concat(this.#held), true);
    return true;
  }

  /** Keeps what of `piece` still fits in the bound (the held bytes are within it). */
  #keepStart(piece: Buffer): void {
    const room = Math.max(0, this.#max - this.#heldBytes);
    if (room > 0) this.#held.push(piece.subarray(0, room));
    this.#heldBytes = Math.min(this.#heldBytes + piece.length, this.#max);
  }

  #give(line: Buffer, cut: boolean): void {
    const bytes = cut ? line.subarray(0, this.#max) : line;
    this.#held = [];
    this.#heldBytes = 0;
    this.#cutting = false;
    this.#onLine(bytes.toString('utf8'), cut);
  }

  #fail(): false {
    this.#failed = true;
    this.#held = [];
    this.#heldBytes = 0;
    return false;
  }
}
