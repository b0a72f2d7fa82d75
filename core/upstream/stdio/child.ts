/**
 * A stdio backend's child process as a `MessageChannel`: newline-delimited JSON-RPC on its stdin
 * and stdout, its stderr to the log (stderr-lines.ts).
 *
 * - Started without a shell, as the leader of a process group of its own (`detached`), so what it
 *   starts (`npx` → `node server`) is ended with it; its environment is child-env.ts's (the
 *   configured variables, PATH and HOME), its working directory the configured one.
 * - Its stdout is read line by line, each line at most `maxLineBytes` (line-splitter.ts); its
 *   messages are checked (stdout-messages.ts). A longer line, or a flood of lines that are not
 *   JSON-RPC, ends it.
 * - A message sent is written as one line (a line break in it, JSON whitespace, as a space).
 * - What is sent waits in its stdin's buffer while it does not read, up to STDIN_BOUND_BYTES (or
 *   `maxLineBytes` when larger): past that a send is refused.
 * - Ended (`close`, a flood) by SIGTERM to its group and SIGKILL after `stopGraceMs`; `close`
 *   also ends its stdin. When it exits by itself, what is left of its group is ended the same way.
 * - `closed` is reported once: when it has exited and its stdout and stderr are read to their end
 *   (bounded in time: a process outside its group may hold them), or when it could not be started.
 * - The process-wide watchdog (watchdog.ts) holds its group while it may have processes, so a
 *   gateway killed by SIGKILL does not leave it running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Logger } from 'pino';
import type { StdioTransportConfig } from '../../plugin-api/backend.ts';
import { formatSize } from '../../config/size.ts';
import type { JsonRpcMessage } from '../../protocol/jsonrpc.ts';
import { ChannelClosed, type ChannelEvents, type ChannelOpener, type MessageChannel } from '../channel/channel.ts';
import { UpstreamError } from '../upstream-error.ts';
import { childEnvironment } from './child-env.ts';
import { LineSplitter } from './line-splitter.ts';
import { signalGroup } from './process-group.ts';
import { StderrLines } from './stderr-lines.ts';
import { StdoutMessages } from './stdout-messages.ts';
import type { Watchdog } from './watchdog.ts';

export interface StdioChildOptions {
  /** The longest line the child may write to stdout (one message, or one batch). */
  readonly maxLineBytes: number;
  readonly log: Logger | null;
  /** The process-wide watchdog (`processWatchdog()`), or null for none. */
  readonly watchdog: Watchdog | null;
}

/** What a child's stdin may hold unread before a send is refused, at least (`maxLineBytes` when larger). */
export const STDIN_BOUND_BYTES = 1024 * 1024;
/** Time allowed, past the grace period, for a child's output pipes to close after it exited. */
const DRAIN_MS = 1_000;
const LINE_BREAK = /[\r\n]/;
const LINE_BREAKS = /[\r\n]/g;

function uncorkStdin(child: StdioChild): void {
  child.uncork();
}

/** Opens each channel to backend `name` by starting its command. */
export function stdioOpener(name: string, config: StdioTransportConfig, options: StdioChildOptions): ChannelOpener {
  return (events) => new StdioChild(name, config, options, events);
}

export class StdioChild implements MessageChannel {
  readonly #name: string;
  readonly #config: StdioTransportConfig;
  readonly #options: StdioChildOptions;
  readonly #events: ChannelEvents;
  readonly #child: ChildProcess | null = null;
  readonly #splitter: LineSplitter;
  readonly #messages: StdoutMessages;
  /** Why it exited ("exited with status 1"), once it has. */
  #exit: string | null = null;
  /** Why the gateway ended it (a flood), when it did. */
  #ended: string | null = null;
  /** `close` was called. */
  #stopping = false;
  /** stdin is corked until the end of this turn of the event loop (send). */
  #corked = false;
  /** SIGTERM went to its group: SIGKILL follows after the grace period unless the group is gone. */
  #groupEnding = false;
  #groupGone = false;
  #killTimer: NodeJS.Timeout | null = null;
  #drainTimer: NodeJS.Timeout | null = null;
  /** Its stdout and stderr, until they close. */
  #openPipes = 2;
  #closed: ChannelClosed | null = null;
  readonly #done: Promise<void>;
  #resolveDone!: () => void;

  constructor(name: string, config: StdioTransportConfig, options: StdioChildOptions, events: ChannelEvents) {
    this.#name = name;
    this.#config = config;
    this.#options = options;
    this.#events = events;
    this.#done = new Promise((resolve) => (this.#resolveDone = resolve));
    this.#messages = new StdoutMessages(name, options.log, (message) => this.#deliver(message));
    this.#splitter = new LineSplitter(options.maxLineBytes, 'fail', (line) => this.#line(line));
    try {
      this.#child = spawn(config.command, config.args, {
        cwd: config.cwd ?? undefined,
        env: childEnvironment(config.env),
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
      });
    } catch (err) {
      // Refused before any process (an argument Node rejects): reported as a failed start,
      // after the opener returned, as a start that fails in the system is.
      setImmediate(() => this.#report(`could not be started (${(err as Error).message})`));
      return;
    }
    this.#wire(this.#child);
  }

  /** The child's pid (also its process group's id), unless it could not be started. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  send(text: string, _headers: readonly string[]): UpstreamError | null {
    if (this.#closed !== null) return this.#closed;
    const gone = this.#ended ?? this.#exit ?? (this.#stopping ? 'was stopped by the gateway' : null);
    if (gone !== null) return new ChannelClosed(gone);
    const stdin = this.#child?.stdin;
    if (stdin === null || stdin === undefined || !stdin.writable) return new ChannelClosed('closed its stdin');
    const waiting = stdin.writableLength;
    if (waiting > Math.max(this.#options.maxLineBytes, STDIN_BOUND_BYTES)) {
      return new UpstreamError('ECHANNEL_STALLED', `does not read its input (${waiting} bytes waiting)`);
    }
    // One turn of the event loop's messages go out in one write (measured: 10 % less of the
    // gateway's CPU per call, and a third of the child's, which reads them in one go). The bound
    // above still holds: corked bytes count in writableLength.
    if (!this.#corked) {
      this.#corked = true;
      stdin.cork();
      setImmediate(uncorkStdin, this);
    }
    // A message is one line: a line break in valid JSON is whitespace, sent as a space.
    stdin.write((LINE_BREAK.test(text) ? text.replace(LINE_BREAKS, ' ') : text) + '\n');
    return null;
  }

  /** The end of the turn in which messages were sent: they go out. */
  uncork(): void {
    this.#corked = false;
    const stdin = this.#child?.stdin;
    if (stdin !== null && stdin !== undefined && !stdin.destroyed) stdin.uncork();
  }

  close(): Promise<void> {
    if (!this.#stopping && this.#closed === null) {
      this.#stopping = true;
      // The end of its input asks an MCP server to exit (the MCP stdio transport's way); SIGTERM
      // goes at once too, to it and to what it started.
      this.#child?.stdin?.end();
      if (this.#exit === null && this.pid !== undefined) this.#endGroup();
    }
    return this.#done;
  }

  /** Listens to the process and its three pipes (an error on any of them is reported by an event, never thrown). */
  #wire(child: ChildProcess): void {
    const log = this.#options.log;
    const pid = child.pid;
    child.on('error', (err) => this.#childError(err));
    child.once('exit', (code, signal) => this.#exited(code, signal));
    child.stdin!.on('error', (err) => log?.debug({ backend: this.#name, backendPid: pid, err }, `backend "${this.#name}": its stdin failed`));
    const stdout = child.stdout!;
    stdout.on('data', (chunk: Buffer) => this.#stdoutChunk(chunk));
    stdout.once('end', () => this.#splitter.end());
    stdout.on('error', (err) => log?.debug({ backend: this.#name, backendPid: pid, err }, `backend "${this.#name}": its stdout failed`));
    stdout.once('close', () => this.#pipeClosed());
    const stderr = child.stderr!;
    if (log === null || pid === undefined) stderr.resume();
    else {
      const lines = new StderrLines(log, this.#name, pid);
      stderr.on('data', (chunk: Buffer) => lines.push(chunk));
      // On close, not end: also when the drain's bound cut it (its count of dropped lines is told).
      stderr.once('close', () => lines.end());
    }
    stderr.on('error', (err) => log?.debug({ backend: this.#name, backendPid: pid, err }, `backend "${this.#name}": its stderr failed`));
    stderr.once('close', () => this.#pipeClosed());
    if (pid !== undefined) {
      this.#options.watchdog?.watch(pid);
      log?.debug({ backend: this.#name, backendPid: pid }, `backend "${this.#name}" started: ${this.#config.command}`);
    }
  }

  /** A failed start (no pid) is the end of the channel; any other error of the process is logged. */
  #childError(err: NodeJS.ErrnoException): void {
    if (this.#child?.pid !== undefined) {
      this.#options.log?.warn({ backend: this.#name, backendPid: this.#child.pid, err }, `backend "${this.#name}": ${err.message}`);
      return;
    }
    const cwd = this.#config.cwd;
    const missingCwd = err.code === 'ENOENT' && cwd !== null && !existsSync(cwd);
    this.#report(`could not be started (${err.message}${missingCwd ? `: its working directory ${cwd} does not exist` : ''})`);
  }

  #stdoutChunk(chunk: Buffer): void {
    if (this.#splitter.push(chunk) || this.#ended !== null) return;
    this.#end(`was ended: it wrote a line longer than ${formatSize(this.#options.maxLineBytes)} to stdout`);
  }

  #line(line: string): void {
    const flood = this.#messages.line(line);
    if (flood !== null) this.#end(flood);
  }

  #deliver(message: JsonRpcMessage): void {
    if (this.#closed !== null || this.#ended !== null) return;
    try {
      this.#events.message(message);
    } catch (err) {
      // Thrown here, inside the stdout 'data' callback, it would end the gateway: the receiver's failure is logged.
      this.#options.log?.error({ backend: this.#name, backendPid: this.pid, err }, `a message of backend "${this.#name}" could not be handled`);
    }
  }

  /** The gateway ends the child (it broke a bound): its output is not read further. */
  #end(reason: string): void {
    if (this.#ended !== null || this.#closed !== null) return;
    this.#ended = reason;
    this.#splitter.stop();
    this.#child?.stdout?.destroy();
    if (this.#exit === null) this.#endGroup();
  }

  /** SIGTERM to the child's group, and SIGKILL after the grace period to what is left of it. */
  #endGroup(): void {
    const pgid = this.pid;
    if (this.#groupEnding || pgid === undefined) return;
    this.#groupEnding = true;
    if (!signalGroup(pgid, 'SIGTERM')) {
      this.#forgetGroup();
      return;
    }
    this.#killTimer = setTimeout(() => {
      this.#killTimer = null;
      signalGroup(pgid, 'SIGKILL');
      this.#forgetGroup();
    }, this.#config.stopGraceMs).unref();
  }

  /** The group has no process left (or was sent SIGKILL): the watchdog lets it go. */
  #forgetGroup(): void {
    if (this.#groupGone) return;
    this.#groupGone = true;
    if (this.#killTimer !== null) clearTimeout(this.#killTimer);
    this.#killTimer = null;
    this.#options.watchdog?.unwatch(this.pid!);
  }

  #exited(code: number | null, signal: NodeJS.Signals | null): void {
    this.#exit = signal !== null ? `was killed by ${signal}` : `exited with status ${code}`;
    this.#child?.stdin?.destroy();
    // What it started may still run in its group (and hold its stdout): it goes with it.
    if (!this.#groupEnding) this.#endGroup();
    else if (!signalGroup(this.pid!, 0)) this.#forgetGroup();
    if (this.#openPipes > 0) {
      this.#drainTimer = setTimeout(() => {
        this.#child?.stdout?.destroy();
        this.#child?.stderr?.destroy();
      }, this.#config.stopGraceMs + DRAIN_MS).unref();
    }
    this.#reportWhenDrained();
  }

  #pipeClosed(): void {
    this.#openPipes--;
    this.#reportWhenDrained();
  }

  #reportWhenDrained(): void {
    if (this.#exit === null || this.#openPipes > 0) return;
    if (this.#drainTimer !== null) clearTimeout(this.#drainTimer);
    this.#report(this.#ended ?? (this.#stopping ? `was stopped by the gateway (it ${this.#exit})` : this.#exit));
  }

  #report(reason: string): void {
    if (this.#closed !== null) return;
    this.#closed = new ChannelClosed(reason);
    const fields = { backend: this.#name, backendPid: this.pid, reason };
    if (this.#stopping && this.#ended === null) this.#options.log?.debug(fields, `backend "${this.#name}" ${reason}`);
    else this.#options.log?.warn(fields, `backend "${this.#name}" ${reason}`);
    try {
      this.#events.closed(this.#closed);
    } catch (err) {
      // Thrown in a process or pipe callback, it would end the gateway: the receiver's failure is logged.
      this.#options.log?.error({ backend: this.#name, backendPid: this.pid, err }, `the end of backend "${this.#name}"'s process could not be handled`);
    }
    this.#resolveDone();
  }
}
