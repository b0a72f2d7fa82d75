/**
 * The GET streams of legacy backends' sessions that the gateway holds for the modern clients of
 * an implicit session (input-stream.ts). A legacy server may ask something during a call on its
 * session's own stream rather than the call's (SDK servers in JSON response mode do): for a
 * modern client's call that may be asked, that stream is opened first, and what comes on it is
 * asked in the one call in flight on that backend session.
 */
import { performance } from 'node:perf_hooks';
import type { Context } from '../../plugin-api/context.ts';
import { GatewayError } from '../../base/errors.ts';
import { isPromise } from '../../base/thenable.ts';
import { isModernVersion } from '../../protocol/era.ts';
import type { JsonRpcRequest, JsonRpcResponse } from '../../protocol/jsonrpc.ts';
import { mcpMethod } from '../../protocol/methods.ts';
import { INTERNAL_ERROR } from './answer.ts';
import type { BackendLink } from './backend-link.ts';
import { observeBackend } from './backend-messages.ts';
import type { SessionHealer } from './healing.ts';
import { InputStream, type InputStreamOwner } from './input-stream.ts';
import type { AggregatedSession } from './session.ts';
import type { BackendSessionRecord } from './session-store.ts';

/** How long a call waits for the backend to open the stream its requests for input may come on. */
const HOLD_STREAM_WAIT_MS = 1_000;
/** How long a backend that refused that stream is not asked again. */
const HOLD_STREAM_RETRY_MS = 30_000;

/** Whether a call may be asked for input by a legacy backend on its session's stream: a modern client's, which declared it can be asked. */
export function mayBeAsked(ctx: Context, session: AggregatedSession, backend: BackendSessionRecord): boolean {
  const capabilities = ctx.envelope?.capabilities;
  if (capabilities === undefined || (capabilities['elicitation'] === undefined && capabilities['sampling'] === undefined && capabilities['roots'] === undefined)) return false;
  return session.record.modern === true && backend.sessionId !== null && !isModernVersion(backend.protocolVersion) && mcpMethod(ctx.rpcMethod ?? '')?.askable === true;
}

/** `promise`, or after `ms` whatever it does. */
function waitAtMost(promise: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]).finally(() => clearTimeout(timer));
}

export class HeldStreams {
  readonly #healer: SessionHealer;

  constructor(healer: SessionHealer) {
    this.#healer = healer;
  }

  /**
   * The GET stream of `record`, held for the session: null when it is open (or refused lately,
   * or no stream connection is free: the call goes without); else it is being opened, and the
   * call waits for the backend's answer to it (at most HOLD_STREAM_WAIT_MS), since a backend
   * drops what it would send on a stream that is not open yet.
   */
  hold(ctx: Context, session: AggregatedSession, link: BackendLink, record: BackendSessionRecord): Promise<unknown> | null {
    const held = session.heldStreams.get(link.name);
    if (held !== undefined && held.record === record) {
      if (held instanceof InputStream) return held.isOpen ? null : waitAtMost(held.opened, HOLD_STREAM_WAIT_MS);
      if (!('close' in held) && performance.now() - held.refusedAt < HOLD_STREAM_RETRY_MS) return null;
    }
    if (held !== undefined && 'close' in held) held.close(); // of a backend session that is gone
    session.heldStreams.delete(link.name);
    if (link.streams.refusal() !== null) return null;
    const stream = new InputStream(this.#owner(session), ctx, link, record);
    session.heldStreams.set(link.name, stream);
    const open = (headers: string[] | GatewayError): void => {
      if (headers instanceof GatewayError || stream.cancelled) stream.close();
      else stream.dispatch(link.streams, 'GET', headers, null);
    };
    const headers = link.headers(ctx, record, 'text/event-stream');
    if (isPromise(headers)) headers.then(open, () => stream.close());
    else open(headers);
    return waitAtMost(stream.opened, HOLD_STREAM_WAIT_MS);
  }

  /** What a held stream of `session` reports to (made once per stream opened). */
  #owner(session: AggregatedSession): InputStreamOwner {
    return {
      request: (stream, request) => this.askOnStream(session, stream.link, stream.record, stream.ctx, request),
      notification: (_stream, message) => observeBackend(session, message),
      ended: (stream, status) => {
        if (session.heldStreams.get(stream.link.name) !== stream) return;
        // Refused (no GET stream there, or another stream of the session has it): not asked again at once. A lost session heals through the calls.
        if (status !== null && status !== 404) session.heldStreams.set(stream.link.name, { refusedAt: performance.now(), record: stream.record });
        else session.heldStreams.delete(stream.link.name);
      },
    };
  }

  /**
   * A request a legacy backend sent a modern client on its session's own stream (a held one, or a
   * listen's). 2026-07-28 takes a server's request only as the input_required answer of a call
   * (tools/call, prompts/get, resources/read) and carries none on subscriptions/listen, and the
   * stream does not say which call it is for: it is asked in the one call of the session in
   * flight on that backend session. With none, or several (the session is shared by the
   * principal's clients with these capabilities), the backend hears at once that it cannot be
   * asked, rather than wait for an answer that cannot come. A ping is answered here.
   */
  askOnStream(session: AggregatedSession, link: BackendLink, record: BackendSessionRecord, ctx: Context, request: JsonRpcRequest): void {
    const answer = (response: Omit<JsonRpcResponse, 'jsonrpc' | 'id'>): void =>
      void this.#healer.send(ctx, session, link, record, { jsonrpc: '2.0', id: request.id, ...response }).catch(() => undefined);
    if (request.method === 'ping') return answer({ result: {} });
    const calls = session.callsOn(link.name, record);
    if (calls.length === 1 && calls[0]!.askFromStream(request)) return;
    const why =
      calls.length === 0
        ? 'no call of this client is in flight to ask it in: a 2026-07-28 client is asked for input only in the answer to a call'
        : `the gateway cannot tell which of ${calls.length} calls in flight this request is for (the client speaks 2026-07-28: it is asked in the answer to a call, and this request came on the session's stream)`;
    answer({ error: { code: INTERNAL_ERROR, message: why } });
  }
}
