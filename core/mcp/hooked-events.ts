/**
 * A request's onResponse hooks on an SSE answer: the event that carries the response to the
 * request goes through the hooks; every other event (progress, logging, the backend's own
 * requests) is written the moment it arrives, and in order, so an async hook holds back only the
 * events behind it. Used by the transparent path (rewrite.ts) and the routed one
 * (aggregate/routed.ts), which differ only in how an event is written out.
 */
import { runResponseHooks } from '../server/chain.ts';
import type { Context } from '../plugin-api/context.ts';
import type { ResponseHook } from '../plugin-api/plugin.ts';
import { isPromise } from '../base/thenable.ts';
import { parseMessage, type JsonRpcId, type JsonRpcResponse } from '../protocol/jsonrpc.ts';
import type { SseEvent } from '../protocol/sse.ts';

/** The JSON-RPC response to request `id` in `data`, or null (another message, or not JSON-RPC). */
export function responseTo(data: string, id: JsonRpcId | null): JsonRpcResponse | null {
  const message = parseMessage(data);
  return message !== null && !('method' in message) && message.id === id ? message : null;
}

/** What the queue needs of the exchange it writes for. */
export interface HookedEventsHost {
  /** Writes to the client; false when its buffer is full (the exchange resumes on drain). */
  write(text: string): boolean;
  /** Reading from the backend may go on (an async hook settled). */
  resume(): void;
  /** Every event was written and the backend's stream has ended. */
  finish(): void;
  /** A hook threw or rejected. */
  hookFailed(err: unknown): void;
  readonly cancelled: boolean;
}

/**
 * How an event is written: `response` is the hooked response when the event carried it, else
 * null (the event as the backend sent it, or as the path rewrites it).
 */
export type EventRenderer = (event: SseEvent, response: JsonRpcResponse | null) => string;

export class HookedEvents {
  #ctx: Context;
  /** The request whose response the hooks see (the client's; the first one of a resumed parked call). */
  readonly #answers: JsonRpcId | null;
  readonly #hooks: readonly ResponseHook[];
  readonly #host: HookedEventsHost;
  readonly #render: EventRenderer;
  readonly #pending: SseEvent[] = [];
  #busy = false;
  #ended = false;

  constructor(ctx: Context, hooks: readonly ResponseHook[], host: HookedEventsHost, render: EventRenderer, answers: JsonRpcId | null = ctx.rpcId) {
    this.#ctx = ctx;
    this.#answers = answers;
    this.#hooks = hooks;
    this.#host = host;
    this.#render = render;
  }

  /** Queues the events and writes what it can; false when the backend should pause. */
  push(events: Iterable<SseEvent>): boolean {
    for (const event of events) this.#pending.push(event);
    return this.#busy ? false : this.#drain();
  }

  /** The hooks run for another request from now on (a parked call resumed by a retry). */
  retarget(ctx: Context): void {
    this.#ctx = ctx;
  }

  /** The backend's stream ended: finishes once the queue is written. */
  end(): void {
    this.#ended = true;
    if (!this.#busy) this.#drain();
  }

  #drain(): boolean {
    let open = true;
    while (this.#pending.length > 0) {
      const event = this.#pending[0]!;
      const response = event.data.length > 0 ? responseTo(event.data, this.#answers) : null;
      if (response === null) {
        this.#pending.shift();
        open = this.#host.write(this.#render(event, null)) && open;
        continue;
      }
      const hooked = runResponseHooks(this.#hooks, this.#ctx, response);
      if (isPromise(hooked)) {
        this.#busy = true;
        // .catch after .then: a settled result that cannot be written (JSON.stringify of a
        // BigInt) fails the exchange too, instead of rejecting with no one listening.
        hooked
          .then((settled) => this.#settled(event, settled))
          .catch((err: unknown) => {
            this.#busy = false;
            this.#host.hookFailed(err);
          });
        return false;
      }
      this.#pending.shift();
      open = this.#host.write(this.#render(event, hooked)) && open;
    }
    if (this.#ended) this.#host.finish();
    return open;
  }

  #settled(event: SseEvent, response: JsonRpcResponse): void {
    this.#busy = false;
    if (this.#host.cancelled) return;
    this.#pending.shift();
    this.#host.write(this.#render(event, response));
    if (this.#drain() && !this.#ended) this.#host.resume();
  }
}
