/**
 * Drives a legacy HTTP+SSE channel (core/upstream/sse/) directly, as the channel layer will: a
 * backend of transport `sse`, the gateway's own pools for its GET stream and its POSTs, and a
 * probe that records what the channel reports (messages, the one `closed`) and the channel's log.
 * Also a scripted HTTP server for the hostile cases: each test says what it answers.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { backendInfo, type BackendInfo } from '../../core/plugin-api/backend.ts';
import { NO_PASSTHROUGH } from '../../core/http/passthrough-headers.ts';
import type { JsonRpcMessage, JsonRpcResponse } from '../../core/protocol/jsonrpc.ts';
import type { ChannelClosed, ChannelEvents, MessageChannel } from '../../core/upstream/channel/channel.ts';
import { Pool } from '../../core/upstream/pool.ts';
import type { BackendTransport } from '../../core/upstream/transport.ts';
import { sseOpener } from '../../core/upstream/sse/legacy-sse-channel.ts';
import { waitFor } from '../fixtures/processes.ts';

export interface ChannelOptions {
  readonly name?: string;
  readonly timeoutMs?: number;
  readonly maxResponseBytes?: number;
  /** The opener's headers (outgoing credentials, Via). */
  readonly headers?: readonly string[];
  /** What the stream transport is seen through (a transport that queues, say). */
  readonly streamThrough?: (pool: Pool) => BackendTransport;
}

/** What a channel reported, and waits on it. */
export class ChannelProbe implements ChannelEvents {
  readonly messages: JsonRpcMessage[] = [];
  readonly closes: ChannelClosed[] = [];
  /** Set when a report came after `closed`, or from inside `send` (neither may). */
  misreport: string | null = null;
  inSend = false;

  message(message: JsonRpcMessage): void {
    if (this.closes.length > 0) this.misreport = 'a message after closed';
    if (this.inSend) this.misreport = 'a message from inside send';
    this.messages.push(message);
  }

  closed(error: ChannelClosed): void {
    if (this.closes.length > 0) this.misreport = 'closed twice';
    if (this.inSend) this.misreport = 'closed from inside send';
    this.closes.push(error);
  }

  /** The response to request `id`. */
  response(id: string | number, timeoutMs = 5_000): Promise<JsonRpcResponse> {
    return waitFor(() => this.messages.find((m): m is JsonRpcResponse => !('method' in m) && m.id === id), timeoutMs);
  }

  /** The channel's one `closed`. */
  async closedWith(timeoutMs = 5_000): Promise<ChannelClosed> {
    return waitFor(() => this.closes[0], timeoutMs);
  }
}

export interface OpenChannel {
  readonly backend: BackendInfo;
  readonly channel: MessageChannel;
  readonly probe: ChannelProbe;
  readonly logs: Record<string, unknown>[];
  /** Sends one message as the channel layer would (its text, the exchange's headers). */
  send(message: JsonRpcMessage, headers?: readonly string[]): ReturnType<MessageChannel['send']>;
  /** Sends a request and waits for its response. */
  request(id: string | number, method: string, params?: Record<string, unknown>, headers?: readonly string[]): Promise<JsonRpcResponse>;
  /** Closes the channel and the pools. */
  dispose(): Promise<void>;
}

/** A backend of transport `sse` at `url`. */
export function sseBackend(url: string, options: ChannelOptions = {}): BackendInfo {
  const bounds = { maxResponseBytes: options.maxResponseBytes ?? 1024 * 1024 };
  return backendInfo(options.name ?? 'legacy', url, options.timeoutMs ?? 2_000, null, bounds, NO_PASSTHROUGH, undefined, undefined, null, { kind: 'sse' });
}

/** Opens a channel to the SSE server at `url` on pools of its own. */
export function openChannel(url: string, options: ChannelOptions = {}): OpenChannel {
  const backend = sseBackend(url, options);
  const origin = new URL(backend.origin);
  const stream = new Pool(origin, { connections: 4, keepAliveMs: 30_000, connectTimeoutMs: 2_000, refuseWhenFull: true });
  const requests = new Pool(origin, { connections: 8, keepAliveMs: 30_000, connectTimeoutMs: 2_000 });
  const logs: Record<string, unknown>[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
  const probe = new ChannelProbe();
  const streamTransport = options.streamThrough?.(stream) ?? stream;
  const channel = sseOpener(backend, { stream: streamTransport, requests }, log)(probe, options.headers ?? []);
  const send = (message: JsonRpcMessage, headers: readonly string[] = []): ReturnType<MessageChannel['send']> => {
    probe.inSend = true;
    try {
      return channel.send(JSON.stringify(message), headers);
    } finally {
      probe.inSend = false;
    }
  };
  return {
    backend,
    channel,
    probe,
    logs,
    send,
    async request(id, method, params, headers) {
      const refused = send(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params }, headers);
      if (refused !== null) throw refused;
      return probe.response(id);
    },
    async dispose() {
      await channel.close();
      stream.close();
      requests.close();
    },
  };
}

/** The initialize request of a 2024-11-05 client. */
export const INITIALIZE = { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'gatehouse-test', version: '0.0.0' } };

/** One request a scripted server received. */
export interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

export type Script = (req: IncomingMessage, res: ServerResponse, body: string) => void;

/** A loopback HTTP server whose every answer `script` writes; it records what it received. */
export interface ScriptedServer {
  readonly url: string;
  readonly origin: string;
  readonly received: Received[];
  /** Responses still open (event streams): ended on close. */
  readonly open: Set<ServerResponse>;
  close(): Promise<void>;
}

export async function startScripted(script: Script): Promise<ScriptedServer> {
  const received: Received[] = [];
  const open = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      open.add(res);
      res.on('close', () => open.delete(res));
      script(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    url: `${origin}/sse`,
    origin,
    received,
    open,
    async close() {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Opens an event stream on `res` (200, text/event-stream) and writes `events` (raw SSE text). */
export function eventStream(res: ServerResponse, ...events: string[]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
  for (const event of events) res.write(event);
}

/** `event: message` with `value` as its JSON data. */
export function messageEvent(value: unknown): string {
  return `event: message\ndata: ${JSON.stringify(value)}\n\n`;
}

/** Runs `body` with a channel to a server that answers with `script`; both are closed after. */
export async function scenario(script: Script, options: ChannelOptions, body: (open: OpenChannel, server: ScriptedServer) => Promise<void>): Promise<void> {
  const server = await startScripted(script);
  const open = openChannel(server.url, options);
  try {
    await body(open, server);
    assert.equal(open.probe.misreport, null);
  } finally {
    await open.dispose();
    await server.close();
  }
}
