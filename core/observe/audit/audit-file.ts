/**
 * The audit trail's file (`logFile`), rotated by size: when a record would take the file past
 * `maxSize`, the file becomes `<logFile>.1` (the older ones shift up to `.<maxFiles>`, the oldest
 * is dropped) and a new file is opened at the path. Written through pino's SonicBoom
 * (`pino.destination`, already the gateway's log writer): asynchronous, in batches. pino-roll (a
 * SonicBoom that rolls) was the alternative: it writes to `<file>.<number>`, the live file's name
 * changing at each roll, where ToolHive's `logFile` is the file being written (the one a
 * collector tails); here the rotation is a size count and a few renames on the rare record that
 * crosses the limit, and no dependency more.
 *
 * The file is created 0600 (ToolHive's mode): an audit trail names who did what.
 */
import cluster from 'node:cluster';
import { existsSync, mkdirSync, openSync, renameSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { Buffer } from 'node:buffer';
import pino from 'pino';

type Destination = ReturnType<typeof pino.destination>;

export class RotatingFile {
  readonly #path: string;
  readonly #maxSize: number;
  readonly #maxFiles: number;
  #out: Destination;
  #bytes: number;
  /** Destinations of rotated files still writing what they held. */
  readonly #closing = new Set<Promise<void>>();

  /** `maxSize` 0: never rotated. */
  constructor(path: string, maxSize: number, maxFiles: number) {
    this.#path = path;
    this.#maxSize = maxSize;
    this.#maxFiles = maxFiles;
    // Its own directory only, not recursively: Node 20's recursive mkdir spins for ever on some
    // file systems (/proc), and a path deeper than one missing level is the operator's to make.
    if (!existsSync(dirname(path))) mkdirSync(dirname(path), { mode: 0o700 });
    this.#bytes = existsSync(path) ? statSync(path).size : 0;
    this.#out = open(path);
  }

  write(text: string): void {
    const bytes = Buffer.byteLength(text);
    if (this.#maxSize > 0 && this.#bytes > 0 && this.#bytes + bytes > this.#maxSize) this.#rotate();
    this.#out.write(text);
    this.#bytes += bytes;
  }

  /**
   * Shifts `.1 … .<maxFiles-1>` up by one and the file to `.1`, then writes on to a new file at
   * the path. The old destination's descriptor follows the renamed file, so what it still holds
   * ends there, in order, as it finishes.
   */
  #rotate(): void {
    try {
      for (let i = this.#maxFiles - 1; i >= 1; i--) {
        const from = `${this.#path}.${i}`;
        if (existsSync(from)) renameSync(from, `${this.#path}.${i + 1}`);
      }
      renameSync(this.#path, `${this.#path}.1`);
    } catch {
      // A rename refused (the directory's permissions changed): keep writing to the file as it is.
      return;
    }
    const old = this.#out;
    this.#out = open(this.#path);
    this.#bytes = 0;
    const closed = end(old).finally(() => this.#closing.delete(closed));
    this.#closing.add(closed);
  }

  async close(): Promise<void> {
    await Promise.all([end(this.#out), ...this.#closing]);
  }
}

/** A destination on a descriptor opened now (so it is ready at once), created 0600. */
function open(path: string): Destination {
  return flushed(pino.destination({ dest: openSync(path, 'a', 0o600), sync: false, minLength: BATCH_BYTES }));
}

/**
 * Records are written in batches of BATCH_BYTES (one write for dozens of records, not one each),
 * and what a batch holds is written within FLUSH_MS when traffic is low; closing writes the rest.
 */
const BATCH_BYTES = 8192;
const FLUSH_MS = 1000;

function flushEvery(out: Destination): NodeJS.Timeout {
  const timer = setInterval(() => {
    try {
      out.flush();
    } catch {
      // Destroyed: the timer goes with it.
      clearInterval(timer);
    }
  }, FLUSH_MS);
  timer.unref();
  return timer;
}

/** A file's destination, flushed every FLUSH_MS until it is closed. */
function flushed(out: Destination): Destination {
  const timer = flushEvery(out);
  out.once('close', () => clearInterval(timer));
  return out;
}

function end(out: Destination): Promise<void> {
  return new Promise((resolve) => {
    out.once('close', () => resolve());
    out.once('error', () => resolve());
    out.end();
  });
}

/**
 * Standard output, written in batches as the file is; closing writes the rest (the descriptor
 * stays open). In a worker of `server.workers` the workers share it: a record is then one write
 * of its own, as the logs' lines are (a write to a pipe up to 4 KiB is never mixed with
 * another's, a batch of 8 KiB could be).
 */
export class StandardOutput {
  readonly #out: Destination = cluster.isWorker ? pino.destination({ dest: 1, sync: true }) : pino.destination({ dest: 1, sync: false, minLength: BATCH_BYTES });
  readonly #timer = cluster.isWorker ? null : flushEvery(this.#out);

  write(text: string): void {
    this.#out.write(text);
  }

  close(): Promise<void> {
    if (this.#timer === null) return Promise.resolve();
    clearInterval(this.#timer);
    return new Promise<void>((resolve) => {
      this.#out.flush(() => resolve());
    });
  }
}
