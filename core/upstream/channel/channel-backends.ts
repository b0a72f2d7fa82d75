/**
 * The channel backends (stdio, legacy SSE) of a running server, across its reloads: a backend's
 * transport, with its sessions and children, lives as long as some generation uses it unchanged.
 * A reload that keeps a backend as it was keeps its transport (its children go on serving the
 * sessions carried over); one that changes it (command, arguments, environment, bounds) gets a
 * new one, and the old one is closed (its children ended) once the last generation using it is;
 * one that removes it closes it the same way.
 */
import type { Logger } from 'pino';
import type { BackendInfo, StdioTransportConfig } from '../../plugin-api/backend.ts';
import type { BackendTransport } from '../transport.ts';
import type { ChannelOpener } from './channel.ts';
import { ChannelTransport } from './channel-transport.ts';

/** How channels are opened, per transport kind: the processes and SSE connections (replaceable in tests). */
export interface ChannelOpeners {
  stdio(backend: BackendInfo, config: StdioTransportConfig, log: Logger | null): ChannelOpener;
  /** Returns the opener and what closes what it holds (its connections). */
  sse(backend: BackendInfo, log: Logger | null): { opener: ChannelOpener; close(): void };
}

interface Held {
  readonly transport: ChannelTransport;
  readonly close: () => void;
  users: number;
}

/** SSE connections per backend at most, one per session (a stdio backend says its own: maxProcesses). */
const SSE_MAX_CONNECTIONS = 256;
/** An SSE connection no request used for this long is closed (its session's next request opens another). */
const SSE_IDLE_MS = 10 * 60_000;

export class ChannelBackends {
  readonly #held = new Map<string, Held>();
  readonly #log: Logger | null;
  readonly #openers: ChannelOpeners;

  constructor(openers: ChannelOpeners, log: Logger | null = null) {
    this.#openers = openers;
    this.#log = log;
  }

  /** The transport of `backend`, shared with every generation that has it unchanged; `release` it when done. */
  acquire(backend: BackendInfo): BackendTransport {
    const key = keyOf(backend);
    let held = this.#held.get(key);
    if (held === undefined) {
      held = this.#make(backend);
      this.#held.set(key, held);
    }
    held.users++;
    return held.transport;
  }

  release(transport: BackendTransport): Promise<void> {
    for (const [key, held] of this.#held) {
      if (held.transport !== transport || --held.users > 0) continue;
      this.#held.delete(key);
      return this.#closeHeld(held);
    }
    return Promise.resolve();
  }

  /** Every transport closed (the server stops). */
  async close(): Promise<void> {
    const all = [...this.#held.values()];
    this.#held.clear();
    await Promise.all(all.map((held) => this.#closeHeld(held)));
  }

  async #closeHeld(held: Held): Promise<void> {
    await held.transport.close();
    held.close();
  }

  #make(backend: BackendInfo): Held {
    const config = backend.transport;
    const log = this.#log;
    if (config.kind === 'stdio') {
      const transport = new ChannelTransport({
        backend,
        opener: this.#openers.stdio(backend, config, log),
        shared: config.shared,
        maxChannels: config.shared ? 1 : config.maxProcesses,
        idleTimeoutMs: config.idleTimeoutMs,
        startupTimeoutMs: config.startupTimeoutMs,
        limitName: 'processes (spec.stdio.maxProcesses)',
        log,
      });
      return { transport, close: () => {}, users: 0 };
    }
    const sse = this.#openers.sse(backend, log);
    const transport = new ChannelTransport({
      backend,
      opener: sse.opener,
      shared: false,
      maxChannels: SSE_MAX_CONNECTIONS,
      idleTimeoutMs: SSE_IDLE_MS,
      startupTimeoutMs: backend.answerTimeoutMs,
      limitName: 'SSE connections',
      log,
    });
    return { transport, close: sse.close, users: 0 };
  }
}

/** What makes two generations' backends the same one: its name, how it is reached, and the bounds of its answers. */
function keyOf(backend: BackendInfo): string {
  return JSON.stringify([backend.name, backend.url.href, backend.transport, backend.maxResponseBytes, backend.timeoutMs, backend.answerTimeoutMs]);
}
