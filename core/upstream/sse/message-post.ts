/**
 * One message of a legacy HTTP+SSE channel POSTed to the server's message endpoint. The server
 * answers it with a bare status (202 or 200): whatever it answers arrives on the event stream, so
 * the body of the POST's answer is discarded, and only its first bytes are kept when the status
 * is a refusal (for the log). An UpstreamHandler the backend's request transport reports to; it
 * tells its owner the outcome once, and nothing after `abort`.
 */
import { Buffer } from 'node:buffer';
import type { JsonRpcId, JsonRpcResponse } from '../../protocol/jsonrpc.ts';
import type { BackendTransport, Carrier, UpstreamError, UpstreamHandler } from '../transport.ts';

/** How much of a refusal's body is kept for the log. */
const SNIPPET_BYTES = 200;

/** JSON-RPC's internal error: what a request whose POST failed is answered with. */
export const INTERNAL_ERROR = -32603;

/**
 * What a message is for the order of the POSTs (post-queue.ts): a request (or a batch of
 * requests only), which may overlap with other requests, or anything else (a notification, a
 * response, a mixed batch), which is sent alone and in its place.
 */
export type MessageKind = 'request' | 'other';

export interface PostOwner {
  /** The POST ended: `status` (0 when it failed before a status came), or the transport's `error`. */
  posted(post: MessagePost, status: number, error: UpstreamError | null): void;
}

export class MessagePost implements UpstreamHandler {
  readonly body: Buffer;
  readonly headers: readonly string[];
  readonly kind: MessageKind;
  /** The ids of the requests the message carries (each is answered with an error if the POST fails). */
  readonly requestIds: readonly (string | number)[];
  readonly #owner: PostOwner;
  readonly #maxBytes: number;
  #transport: BackendTransport | null = null;
  #carrier: Carrier | null = null;
  #status = 0;
  #size = 0;
  #snippet = '';
  #done = false;

  constructor(owner: PostOwner, text: string, headers: readonly string[], maxBytes: number) {
    this.#owner = owner;
    this.body = Buffer.from(text);
    this.headers = headers;
    this.#maxBytes = maxBytes;
    const { kind, requestIds } = describeMessage(text);
    this.kind = kind;
    this.requestIds = requestIds;
  }

  /** The first bytes of a refusal's body, for the log. */
  get snippet(): string {
    return this.#snippet;
  }

  /** Sends it to `target` (path and query) on `transport`. */
  dispatch(transport: BackendTransport, target: string, timeoutMs: number, answerTimeoutMs: number): void {
    this.#transport = transport;
    transport.dispatch(this, 'POST', target, this.headers, this.body, timeoutMs, answerTimeoutMs);
  }

  /** Stops it (the channel closed): its outcome is not reported. */
  abort(): void {
    if (this.#done) return;
    this.#done = true;
    const carrier = this.#carrier;
    this.#carrier = null;
    if (carrier !== null && carrier.handler === this) carrier.abort();
    else if (carrier === null) this.#transport?.cancel(this);
  }

  attach(carrier: Carrier): void {
    this.#carrier = carrier;
    // Dispatched after it was aborted (a transport that queued it): it stops at once.
    if (this.#done) {
      this.#carrier = null;
      carrier.abort();
    }
  }

  onHeaders(status: number): boolean {
    this.#status = status;
    return !this.#done;
  }

  onData(chunk: Buffer): boolean {
    if (this.#done) return false;
    this.#size += chunk.length;
    if (this.#size > this.#maxBytes) {
      // Nothing of it is held, but a body that never ends would hold the connection: the status stands.
      const status = this.#status;
      this.abort();
      this.#owner.posted(this, status, null);
      return false;
    }
    if ((this.#status < 200 || this.#status > 299) && this.#snippet.length < SNIPPET_BYTES) {
      this.#snippet += chunk.subarray(0, SNIPPET_BYTES - this.#snippet.length).toString('utf8');
    }
    return true;
  }

  onComplete(): void {
    this.#carrier = null;
    if (this.#done) return;
    this.#done = true;
    this.#owner.posted(this, this.#status, null);
  }

  onError(error: UpstreamError): void {
    this.#carrier = null;
    if (this.#done) return;
    this.#done = true;
    this.#owner.posted(this, 0, error);
  }
}

/**
 * The kind of a serialized message and the ids of the requests in it. The gateway wrote it, so it
 * parses; one that does not is sent as it is, in its place, and nothing answers for it.
 */
function describeMessage(text: string): { kind: MessageKind; requestIds: (string | number)[] } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: 'other', requestIds: [] };
  }
  const items = Array.isArray(value) ? value : [value];
  const requestIds: (string | number)[] = [];
  for (const item of items) {
    const id = requestId(item);
    if (id !== null) requestIds.push(id);
  }
  return { kind: requestIds.length === items.length && items.length > 0 ? 'request' : 'other', requestIds };
}

function requestId(item: unknown): string | number | null {
  if (typeof item !== 'object' || item === null || !('method' in item) || !('id' in item)) return null;
  const id = (item as { id: unknown }).id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** The error response a request gets when its POST failed: the call fails at once, with `message`. */
export function failedRequest(id: JsonRpcId, message: string): JsonRpcResponse {
  return { jsonrpc: '2.0', id, error: { code: INTERNAL_ERROR, message } };
}
