/**
 * The order in which a legacy HTTP+SSE channel POSTs its messages, and how many may wait.
 *
 * Each POST may travel on a connection of its own, so two POSTs in flight together may reach the
 * server in either order. A server reads its messages in the order they arrive, and some refuse a
 * request that comes before `notifications/initialized` (the servers of the Python SDK's version 1
 * do). So a notification or a response (or a batch with one) is POSTed only once every message
 * sent before it was taken, and nothing sent after it starts before it was taken; requests between
 * two such messages travel together (a server answers them on the stream, in its own time, and the
 * POST of a request is taken at once). Messages wait while the server has not announced its
 * endpoint, or for their turn: at most `MAX_WAITING` of them, and `maxBytes` in all.
 */
import { formatSize } from '../../config/size.ts';
import type { MessagePost } from './message-post.ts';

/** The most messages waiting for the endpoint or for their turn. */
export const MAX_WAITING = 64;

export class PostQueue {
  readonly #maxBytes: number;
  readonly #waiting: MessagePost[] = [];
  #waitingBytes = 0;
  readonly #inFlight = new Set<MessagePost>();
  /** A notification or response is in flight: nothing else starts. */
  #alone = false;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** Whether `post` may start now (nothing waits before it, and its kind allows it). */
  canStart(post: MessagePost): boolean {
    return this.#waiting.length === 0 && this.#allows(post);
  }

  /** Counts `post` as in flight (it starts now). */
  start(post: MessagePost): void {
    this.#inFlight.add(post);
    if (post.kind === 'other') this.#alone = true;
  }

  /** Queues `post` behind the others; the reason it cannot wait (following `backend "<name>" `), or null. */
  hold(post: MessagePost, why: string): string | null {
    if (this.#waiting.length >= MAX_WAITING) return `${why}, and ${MAX_WAITING} messages already wait for it`;
    if (this.#waitingBytes + post.body.length > this.#maxBytes) {
      return `${why}, and the messages waiting for it would exceed ${formatSize(this.#maxBytes)} (operational.maxBackendResponseSize)`;
    }
    this.#waiting.push(post);
    this.#waitingBytes += post.body.length;
    return null;
  }

  /** The next waiting message that may start now, counted as in flight; null when none may. */
  next(): MessagePost | null {
    const post = this.#waiting[0];
    if (post === undefined || !this.#allows(post)) return null;
    this.#waiting.shift();
    this.#waitingBytes -= post.body.length;
    this.start(post);
    return post;
  }

  /** `post` ended (taken, refused or failed): the messages behind it may start. */
  done(post: MessagePost): void {
    if (!this.#inFlight.delete(post)) return;
    if (post.kind === 'other') this.#alone = false;
  }

  /** Every message waiting or in flight, forgotten (the channel closed). */
  drain(): MessagePost[] {
    const all = [...this.#inFlight, ...this.#waiting];
    this.#inFlight.clear();
    this.#waiting.length = 0;
    this.#waitingBytes = 0;
    this.#alone = false;
    return all;
  }

  #allows(post: MessagePost): boolean {
    if (this.#alone) return false;
    return post.kind === 'request' || this.#inFlight.size === 0;
  }
}
