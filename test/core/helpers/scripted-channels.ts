/**
 * A `ChannelTransport` driven by hand, for tests of what a hostile client or backend can make of
 * it: channels whose backend the test scripts (it answers `initialize` unless told otherwise, and
 * otherwise says only what the test makes it say), and exchanges that record what the transport
 * reports to them (and can pause, as a slow client does).
 */
import { backendInfo, type BackendInfo } from '../../../core/plugin-api/backend.ts';
import type { JsonRpcMessage } from '../../../core/protocol/jsonrpc.ts';
import { ChannelClosed, type ChannelEvents, type ChannelOpener, type MessageChannel } from '../../../core/upstream/channel/channel.ts';
import { ChannelTransport, type ChannelTransportOptions } from '../../../core/upstream/channel/channel-transport.ts';
import type { Carrier, UpstreamError, UpstreamHandler } from '../../../core/upstream/transport.ts';

/** One channel: what the gateway sent it, and a way to make the backend say something. */
export class ScriptedChannel implements MessageChannel {
  readonly sent: Record<string, unknown>[] = [];
  closed = false;
  readonly #events: ChannelEvents;
  readonly #refuseInit: ((params: Record<string, unknown>) => string | null) | null;
  readonly #silent: boolean;

  constructor(events: ChannelEvents, refuseInit: ((params: Record<string, unknown>) => string | null) | null, silent: boolean) {
    this.#events = events;
    this.#refuseInit = refuseInit;
    this.#silent = silent;
  }

  send(text: string): UpstreamError | null {
    if (this.closed) return new ChannelClosed('exited');
    const message = JSON.parse(text) as Record<string, unknown>;
    this.sent.push(message);
    if (message.method === 'initialize' && !this.#silent) {
      const refused = this.#refuseInit?.((message.params ?? {}) as Record<string, unknown>) ?? null;
      // It speaks the version it is asked for, as servers do for the versions they know.
      const version = (message.params as { protocolVersion?: string } | undefined)?.protocolVersion ?? '2025-06-18';
      const answer = refused === null ? { result: { protocolVersion: version, capabilities: { tools: {} }, serverInfo: { name: 'scripted', version: '1' } } } : { error: { code: -32602, message: refused } };
      queueMicrotask(() => this.emit({ jsonrpc: '2.0', id: message.id as number, ...answer } as JsonRpcMessage));
    }
    return null;
  }

  /** The backend's process exits (or its stream closes) with `reason`. */
  exit(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.#events.closed(new ChannelClosed(reason));
  }

  /** The backend writes `message`. */
  emit(message: JsonRpcMessage): void {
    if (!this.closed) this.#events.message(message);
  }

  /** The requests (by method) the gateway sent, in order. */
  requests(method: string): Record<string, unknown>[] {
    return this.sent.filter((m) => m.method === method);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    queueMicrotask(() => this.#events.closed(new ChannelClosed('was ended')));
  }
}

export interface ScriptedOptions {
  readonly shared?: boolean;
  readonly maxChannels?: number;
  readonly idleTimeoutMs?: number;
  readonly startupTimeoutMs?: number;
  readonly maxResponseBytes?: number;
  /** Why the backend refuses an initialize with these params (null: it does not). */
  readonly refuseInit?: (params: Record<string, unknown>) => string | null;
  /** Called with each channel as it opens (to make it exit at once, say). */
  readonly onOpen?: (channel: ScriptedChannel) => void;
  /** The backend never answers initialize. */
  readonly silent?: boolean;
}

export function scriptedTransport(options: ScriptedOptions = {}): { transport: ChannelTransport; channels: ScriptedChannel[]; backend: BackendInfo } {
  const channels: ScriptedChannel[] = [];
  const opener: ChannelOpener = (events) => {
    const channel = new ScriptedChannel(events, options.refuseInit ?? null, options.silent ?? false);
    channels.push(channel);
    options.onOpen?.(channel);
    return channel;
  };
  const backend = backendInfo('scripted', 'stdio://scripted', 10_000, null, { maxResponseBytes: options.maxResponseBytes ?? 1024 * 1024 });
  const config: ChannelTransportOptions = {
    backend,
    opener,
    shared: options.shared ?? false,
    maxChannels: options.maxChannels ?? 8,
    idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
    startupTimeoutMs: options.startupTimeoutMs ?? 10_000,
    limitName: 'processes (spec.stdio.maxProcesses)',
  };
  return { transport: new ChannelTransport(config), channels, backend };
}

/** An exchange as the gateway's are: it records the head, the body and the end. */
export class RecordingHandler implements UpstreamHandler {
  carrier: Carrier | null = null;
  status = 0;
  headers: string[] = [];
  body = '';
  completed = false;
  error: UpstreamError | null = null;
  /** Return false from onData (a client that does not read). */
  paused = false;
  readonly #settled: Promise<void>;
  #settle!: () => void;

  constructor() {
    this.#settled = new Promise((resolve) => (this.#settle = resolve));
  }

  attach(carrier: Carrier): void {
    this.carrier = carrier;
  }

  onHeaders(status: number, headers: string[]): boolean {
    this.status = status;
    this.headers = headers;
    return !this.paused;
  }

  onData(chunk: Buffer): boolean {
    this.body += chunk.toString('utf8');
    return !this.paused;
  }

  onComplete(): void {
    this.completed = true;
    this.#settle();
  }

  onError(error: UpstreamError): void {
    this.error = error;
    this.#settle();
  }

  /** Settles once the exchange completed or failed (the transport's own timer does not keep a test running: this does). */
  async done(): Promise<void> {
    const alive = setInterval(() => {}, 1_000);
    try {
      await this.#settled;
    } finally {
      clearInterval(alive);
    }
  }

  header(name: string): string | null {
    for (let i = 0; i < this.headers.length; i += 2) if (this.headers[i] === name) return this.headers[i + 1]!;
    return null;
  }

  /** The JSON-RPC messages of the body (a JSON body, or the data of its events). */
  bodyMessages(): Record<string, unknown>[] {
    if (this.body.length === 0) return [];
    if (!this.body.startsWith('event:')) return [JSON.parse(this.body) as Record<string, unknown>];
    return this.body
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
  }
}

export const CLIENT_PARAMS = { protocolVersion: '2025-06-18', capabilities: { sampling: {} }, clientInfo: { name: 'test', version: '1' } };

/** POSTs `body` (a message or a batch) on `sessionId` (null: none). */
export function post(transport: ChannelTransport, body: unknown, sessionId: string | null, answerTimeoutMs = 0): RecordingHandler {
  const handler = new RecordingHandler();
  const headers = ['accept', 'application/json, text/event-stream', 'content-type', 'application/json'];
  if (sessionId !== null) headers.push('mcp-session-id', sessionId);
  transport.dispatch(handler, 'POST', '/mcp', headers, Buffer.from(JSON.stringify(body)), 10_000, answerTimeoutMs);
  return handler;
}

/** A GET stream of `sessionId`. */
export function getStream(transport: ChannelTransport, sessionId: string): RecordingHandler {
  const handler = new RecordingHandler();
  transport.dispatch(handler, 'GET', '/mcp', ['accept', 'text/event-stream', 'mcp-session-id', sessionId], null, 10_000);
  return handler;
}

/** A new session (initialize answered); its id. */
export async function openSession(transport: ChannelTransport, params: unknown = CLIENT_PARAMS): Promise<string> {
  const handler = post(transport, { jsonrpc: '2.0', id: 1, method: 'initialize', params }, null);
  await handler.done();
  const id = handler.header('mcp-session-id');
  if (id === null) throw new Error(`initialize failed: ${handler.error?.message ?? handler.body}`);
  return id;
}

export const tick = (ms = 0): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
