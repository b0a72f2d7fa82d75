/**
 * The JSON-RPC messages in a child's stdout lines. A line holds one message, or a batch (a JSON
 * array) that is delivered message by message; each is checked with `messageProblem` before it
 * reaches the gateway. A line nested more than MAX_NESTING levels deep is not taken, as an SSE
 * backend's event is not (the gateway writes messages anew, and JSON.stringify runs out of stack
 * a few thousand levels down). Blank lines are ignored. A line that is not JSON-RPC (a server's stray
 * `console.log`, a banner) is logged (its start) and skipped, but a child that writes more than
 * INVALID_LINES_LIMIT of them within INVALID_LINES_WINDOW_MS is not speaking MCP: it is ended.
 */
import { Buffer } from 'node:buffer';
import { oneLine } from '../../plugin-api/plugin-loader.ts';
import type { Logger } from 'pino';
import { MAX_NESTING, messageProblem, nestsDeeperThan, type JsonRpcMessage } from '../../protocol/jsonrpc.ts';

export const INVALID_LINES_LIMIT = 64;
export const INVALID_LINES_WINDOW_MS = 10_000;
/** How much of a line that is not JSON-RPC the log shows. */
const LOGGED_CHARS = 200;

export class StdoutMessages {
  readonly #backend: string;
  readonly #log: Logger | null;
  readonly #deliver: (message: JsonRpcMessage) => void;
  readonly #now: () => number;
  /** When the last INVALID_LINES_LIMIT + 1 invalid lines came, a ring indexed by `#invalidLines`. */
  readonly #times = new Float64Array(INVALID_LINES_LIMIT + 1);
  #invalidLines = 0;

  constructor(backend: string, log: Logger | null, deliver: (message: JsonRpcMessage) => void, now: () => number = Date.now) {
    this.#backend = backend;
    this.#log = log;
    this.#deliver = deliver;
    this.#now = now;
  }

  /** Lines that were not JSON-RPC, so far. */
  get invalidLines(): number {
    return this.#invalidLines;
  }

  /**
   * One line of stdout: its messages are delivered. Returns why the child must be ended (too
   * many lines that are not JSON-RPC, worded to follow `backend "<name>" `), or null.
   */
  line(text: string): string | null {
    if (text.length === 0 || text.trim().length === 0) return null;
    if (text.length > 2 * MAX_NESTING && nestsDeeperThan(Buffer.from(text), MAX_NESTING)) return this.#invalid(text, `nested more than ${MAX_NESTING} levels deep`);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return this.#invalid(text, 'not JSON');
    }
    if (!Array.isArray(value)) {
      const problem = messageProblem(value);
      if (problem !== null) return this.#invalid(text, problem);
      this.#deliver(value as JsonRpcMessage);
      return null;
    }
    if (value.length === 0) return this.#invalid(text, 'an empty batch');
    let problem: string | null = null;
    for (let i = 0; i < value.length; i++) {
      const elementProblem = messageProblem(value[i]);
      if (elementProblem === null) this.#deliver(value[i] as JsonRpcMessage);
      else problem ??= `batch element ${i}: ${elementProblem}`;
    }
    return problem === null ? null : this.#invalid(text, problem);
  }

  #invalid(text: string, problem: string): string | null {
    this.#log?.warn(
      { backend: this.#backend, problem, line: text.slice(0, LOGGED_CHARS) },
      `backend "${this.#backend}" wrote a line to stdout that is not JSON-RPC (${oneLine(problem, LOGGED_CHARS)}); it is skipped`,
    );
    const now = this.#now();
    this.#times[this.#invalidLines % this.#times.length] = now;
    this.#invalidLines++;
    if (this.#invalidLines <= INVALID_LINES_LIMIT) return null;
    // The slot after the newest holds the oldest of the last INVALID_LINES_LIMIT + 1.
    const oldest = this.#times[this.#invalidLines % this.#times.length]!;
    if (now - oldest >= INVALID_LINES_WINDOW_MS) return null;
    return `was ended: it wrote more than ${INVALID_LINES_LIMIT} lines that are not JSON-RPC to stdout within ${INVALID_LINES_WINDOW_MS / 1000} s`;
  }
}
