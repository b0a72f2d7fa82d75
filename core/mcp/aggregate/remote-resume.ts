/**
 * A modern client's retry of a parked call (parked-calls.ts) that reached another replica than
 * the one holding the backend's stream. The replica that got the retry (B) checked its
 * `requestState`; it asks the holder (A) to resume the call, and A does so as for a local retry,
 * except that the "client" A writes to is a response relayed to B (`RelayedResponse`), which B
 * writes into the retry's own answer (`RemoteAnswers`). The client sees one answer, whichever
 * replica it reached.
 *
 * Messages (relay.ts): B→A `resume` {park, resumeId, from, answers, rpcId, envelope}; A→B
 * `head` / `data` {text} / `end` {text} / `gone` per resumeId; B→A `cancel` {resumeId} when
 * the client leaves.
 */
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { Buffer } from 'node:buffer';
import type { Context } from '../../plugin-api/context.ts';
import { Context as RequestContext } from '../../plugin-api/context.ts';
import { GatewayError, rpcErrorResponse } from '../../base/errors.ts';
import { pushCorsHeaders } from '../../http/cors.ts';
import type { HttpHeaders, HttpRequest, HttpResponse } from '../../http/types.ts';
import type { ClientEnvelope } from '../../protocol/era.ts';
import type { JsonRpcId } from '../../protocol/jsonrpc.ts';
import type { Relay } from './relay.ts';

/** How long B waits for the holder's first word before answering the retry with an error. */
const FIRST_WORD_MS = 10_000;
/** How long the relayed answer may stay silent (a holder that went away mid-answer) before B ends it. */
const IDLE_MS = 10 * 60_000;

/** A's side: the retry's answer, as B will write it, relayed piece by piece. */
class RelayedResponse extends EventEmitter implements HttpResponse {
  statusCode = 200;
  headersSent = false;
  writableEnded = false;
  writableFinished = false;
  destroyed = false;
  readonly #relay: Relay;
  readonly #to: string;
  readonly #resumeId: string;

  constructor(relay: Relay, to: string, resumeId: string) {
    super();
    this.#relay = relay;
    this.#to = to;
    this.#resumeId = resumeId;
  }

  #send(type: string, text?: string): void {
    void this.#relay.send(this.#to, { type, resumeId: this.#resumeId, ...(text === undefined ? {} : { text }) }).then((heard) => {
      if (!heard) this.destroy();
    });
  }

  writeHead(status: number, _headers?: HttpHeaders): this {
    this.statusCode = status;
    this.headersSent = true;
    this.#send('head');
    return this;
  }

  setHeader(): this {
    return this;
  }

  flushHeaders(): void {}

  write(chunk: Buffer | string): boolean {
    if (this.writableEnded || this.destroyed) return false;
    this.#send('data', String(chunk));
    return true;
  }

  end(chunk?: Buffer | string): this {
    if (this.writableEnded || this.destroyed) return this;
    this.writableEnded = true;
    this.writableFinished = true;
    this.#send('end', chunk === undefined ? undefined : String(chunk));
    this.emit('close');
    return this;
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.emit('close');
  }
}

/**
 * A's side: the context the parked call resumes into — the retry's id and envelope, the
 * original request's principal and target (the same principal: the seal said so), and a
 * response relayed to B.
 */
export function relayedContext(original: Context, relay: Relay, to: string, resumeId: string, rpcId: JsonRpcId, envelope: ClientEnvelope | null): Context {
  const req = { rawHeaders: [], headers: {}, url: original.path, method: 'POST', complete: true, socket: original.req.socket } as unknown as HttpRequest;
  const ctx = new RequestContext(req, new RelayedResponse(relay, to, resumeId), original.scope, performance.now());
  ctx.mcp = true;
  ctx.rpcId = rpcId;
  ctx.rpcMethod = original.rpcMethod;
  ctx.envelope = envelope ?? original.envelope;
  ctx.principal = original.principal;
  ctx.target = original.target;
  return ctx;
}

/** B's side: the retries waiting for what their holders relay. */
export class RemoteAnswers {
  readonly #pending = new Map<string, { readonly ctx: Context; timer: NodeJS.Timeout }>();

  /** Waits for the holder's words for `ctx` (the retry) under `resumeId`; `cancel` tells the holder the client left. */
  expect(resumeId: string, ctx: Context, cancel: () => void): void {
    const timer = setTimeout(() => this.#fail(resumeId, 'the replica holding the call did not answer'), FIRST_WORD_MS);
    timer.unref();
    this.#pending.set(resumeId, { ctx, timer });
    ctx.inflight = {
      cancel: () => {
        if (this.#drop(resumeId) !== undefined) cancel();
      },
    };
  }

  /** The holder spoke. */
  relayed(message: { type: string; resumeId?: unknown; text?: unknown }): void {
    if (typeof message.resumeId !== 'string') return;
    const pending = this.#pending.get(message.resumeId);
    if (pending === undefined) return;
    clearTimeout(pending.timer);
    const resumeId = message.resumeId;
    pending.timer = setTimeout(() => this.#fail(resumeId, 'the replica holding the call stopped answering'), IDLE_MS);
    pending.timer.unref();
    const res = pending.ctx.res;
    const text = typeof message.text === 'string' ? message.text : undefined;
    switch (message.type) {
      case 'head':
        if (!res.headersSent) {
          const headers = ['content-type', 'text/event-stream', 'cache-control', 'no-cache, no-transform', 'x-accel-buffering', 'no', 'x-request-id', pending.ctx.requestId];
          pushCorsHeaders(headers, pending.ctx.corsOrigin);
          res.writeHead(200, headers);
          res.flushHeaders();
        }
        return;
      case 'data':
        if (text !== undefined && res.headersSent && !res.writableEnded) res.write(text);
        return;
      case 'end':
        this.#drop(message.resumeId);
        if (!res.writableEnded) res.end(text);
        return;
      case 'gone':
        this.#fail(message.resumeId, 'this requestState was used already, or its call has ended');
    }
  }

  /** The holder is unknown or gone: the retry gets -32602. */
  #fail(resumeId: string, why: string): void {
    const pending = this.#drop(resumeId);
    if (pending === undefined) return;
    const res = pending.ctx.res;
    if (res.headersSent) {
      if (!res.writableEnded) res.end();
      return;
    }
    // As a retry refused here would be: a JSON-RPC error of the request, HTTP 200.
    const body = JSON.stringify(rpcErrorResponse(new GatewayError('invalid_params', `Invalid params: ${why}`), pending.ctx.rpcId));
    const headers = ['content-type', 'application/json', 'content-length', String(Buffer.byteLength(body)), 'x-request-id', pending.ctx.requestId];
    pushCorsHeaders(headers, pending.ctx.corsOrigin);
    res.writeHead(200, headers);
    res.end(body);
  }

  #drop(resumeId: string): { readonly ctx: Context; readonly timer: NodeJS.Timeout } | undefined {
    const pending = this.#pending.get(resumeId);
    if (pending === undefined) return undefined;
    clearTimeout(pending.timer);
    this.#pending.delete(resumeId);
    if (pending.ctx.inflight !== null) pending.ctx.inflight = null;
    return pending;
  }
}
