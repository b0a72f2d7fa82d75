/**
 * A child's stderr in the gateway's log: one entry per line, with the backend's name and the
 * child's pid. Bounded, as a child may write anything there: a line is cut at
 * STDERR_LINE_BYTES (the entry says `cut: true`), and at most STDERR_LINES_PER_WINDOW lines are
 * logged per STDERR_WINDOW_MS; the lines past that are counted, and one entry at the end of the
 * window (or at exit) says how many were dropped.
 */
import type { Logger } from 'pino';
import { oneLine } from '../../plugin-api/plugin-loader.ts';
import { LineSplitter } from './line-splitter.ts';

export const STDERR_LINE_BYTES = 4096;
export const STDERR_LINES_PER_WINDOW = 100;
export const STDERR_WINDOW_MS = 10_000;

export class StderrLines {
  readonly #log: Logger;
  readonly #backend: string;
  readonly #backendPid: number | undefined;
  readonly #now: () => number;
  readonly #splitter: LineSplitter;
  /** When the current window began (its first line), and the lines logged and dropped in it. */
  #windowStart = Number.NEGATIVE_INFINITY;
  #logged = 0;
  #dropped = 0;
  #summaryTimer: NodeJS.Timeout | null = null;

  /** `now`: the clock the windows are measured on (tests pass their own). */
  constructor(log: Logger, backend: string, backendPid: number | undefined, now: () => number = Date.now) {
    this.#log = log;
    this.#backend = backend;
    this.#backendPid = backendPid;
    this.#now = now;
    this.#splitter = new LineSplitter(STDERR_LINE_BYTES, 'cut', (line, cut) => this.#line(line, cut));
  }

  push(chunk: Buffer): void {
    this.#splitter.push(chunk);
  }

  /** The stream ended: its unfinished last line is logged, and the count of dropped lines if any. */
  end(): void {
    this.#splitter.end();
    this.#summarize();
  }

  #line(line: string, cut: boolean): void {
    const now = this.#now();
    if (now - this.#windowStart >= STDERR_WINDOW_MS) {
      this.#summarize();
      this.#windowStart = now;
      this.#logged = 0;
    }
    if (this.#logged < STDERR_LINES_PER_WINDOW) {
      this.#logged++;
      const fields = { backend: this.#backend, backendPid: this.#backendPid, stream: 'stderr' };
      // The line is the entry's message: a terminal reading the pretty log must not get the child's CR, NUL or escape sequences.
      this.#log.info(cut ? { ...fields, cut: true } : fields, oneLine(line, STDERR_LINE_BYTES));
      return;
    }
    this.#dropped++;
    // The summary comes when the window ends even if the child then stays silent; the timer
    // never keeps the gateway running.
    this.#summaryTimer ??= setTimeout(() => this.#summarize(), this.#windowStart + STDERR_WINDOW_MS - now).unref();
  }

  #summarize(): void {
    if (this.#summaryTimer !== null) clearTimeout(this.#summaryTimer);
    this.#summaryTimer = null;
    if (this.#dropped === 0) return;
    const dropped = this.#dropped;
    this.#dropped = 0;
    this.#log.warn(
      { backend: this.#backend, backendPid: this.#backendPid, stream: 'stderr', dropped },
      `${dropped} lines of backend "${this.#backend}"'s stderr were dropped: at most ${STDERR_LINES_PER_WINDOW} are logged per ${STDERR_WINDOW_MS / 1000} s`,
    );
  }
}
