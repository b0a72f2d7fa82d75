/**
 * node:http's response with the two limits node:http does not have, as the Gatehouse engine
 * holds them (http/wire/client-connection.ts), for `server.engine: node`:
 *  - `maxStreamBuffer`: a write that finds more than the limit still waiting for the client (in
 *    the response and its socket) drops the connection. Without it, the events the gateway
 *    sends itself on a stream whose client stopped reading (an aggregated GET stream, a listen)
 *    would be buffered for as long as they come. The last write is not bounded: it ends the
 *    response. Writers that wait for 'drain' (a backend's stream piped through) stay far below.
 *  - `sendTimeout`: once a write (the last one too) finds the client not taking what it was
 *    sent, the client must take bytes within the timeout, or the connection is closed. A slow
 *    client that keeps taking bytes is not cut; a paused backend stream, or an answer's unsent
 *    end, is not held forever for one that takes none.
 * Nothing is allocated per response until a write is blocked.
 */
import { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ConnectionLimits } from '../config/server-settings.ts';
import { queuedBytes } from '../http/handle-writing.ts';
import type { GatewayMetrics } from '../observe/metrics.ts';

/**
 * Bytes of `socket` the kernel has taken: what was handed to libuv less what libuv still holds.
 * Only the client reading moves it (a new write adds to both), and it counts bytes on both
 * sides, whatever the encoding of what was written.
 */
function bytesTaken(socket: Socket): number {
  return ((socket as unknown as { _bytesDispatched?: number })._bytesDispatched ?? 0) - queuedBytes(socket);
}

interface Limits {
  readonly maxStreamBuffer: number;
  readonly sendTimeoutMs: number;
  readonly metrics: GatewayMetrics;
}

type Write = (chunk?: unknown, encoding?: unknown, callback?: unknown) => unknown;
const write = ServerResponse.prototype.write as Write;
const end = ServerResponse.prototype.end as Write;

/** The response; each listener's subclass (limitedResponse) sets `limits` on its prototype. */
abstract class LimitedServerResponse extends ServerResponse {
  declare readonly limits: Limits;
  #stall: NodeJS.Timeout | null = null;
  /** bytesTaken when the stall timer was last armed. */
  #taken = 0;
  #watched = false;

  // The overloads of write and end in one signature each (what node's implementation takes).
  override write(chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
    const { maxStreamBuffer, metrics } = this.limits;
    if (maxStreamBuffer > 0 && this.writableLength > maxStreamBuffer && !this.destroyed) {
      this.destroy();
      metrics.limited('stream_buffer');
      return false;
    }
    const taken = write.call(this, chunk, encoding, callback) as boolean;
    if (!taken) this.#watch();
    return taken;
  }

  override end(chunk?: unknown, encoding?: unknown, callback?: unknown): this {
    end.call(this, chunk, encoding, callback);
    if (this.writableLength > 0) this.#watch();
    return this;
  }

  /** Something waits for the client: the stall timer runs until nothing does (checked when it fires). */
  #watch(): void {
    if (this.limits.sendTimeoutMs === 0 || this.#stall !== null || this.destroyed || this.socket === null) return;
    if (!this.#watched) {
      this.#watched = true;
      this.once('close', () => {
        if (this.#stall !== null) clearTimeout(this.#stall);
        this.#stall = null;
      });
    }
    this.#arm(bytesTaken(this.socket));
  }

  #arm(taken: number): void {
    this.#taken = taken;
    this.#stall = setTimeout(() => this.#stalled(), this.limits.sendTimeoutMs);
    this.#stall.unref();
  }

  #stalled(): void {
    this.#stall = null;
    const socket = this.socket;
    if (this.destroyed || this.writableFinished || socket === null) return;
    // Nothing waits any more (drained, and not ended with bytes left): a later block arms anew.
    if (!this.writableNeedDrain && !(this.writableEnded && this.writableLength > 0)) return;
    const now = bytesTaken(socket);
    if (now !== this.#taken) return this.#arm(now); // the client is slow, not gone
    this.destroy();
    this.limits.metrics.limited('send_timeout');
  }
}

/** The response class of one node:http listener, holding `limits` (one class per listener, made at start). */
export function limitedResponse(limits: ConnectionLimits, metrics: GatewayMetrics): typeof ServerResponse {
  class ListenerResponse extends LimitedServerResponse {}
  Object.defineProperty(ListenerResponse.prototype, 'limits', { value: { maxStreamBuffer: limits.maxStreamBuffer, sendTimeoutMs: limits.sendTimeoutMs, metrics } satisfies Limits });
  return ListenerResponse as unknown as typeof ServerResponse;
}
