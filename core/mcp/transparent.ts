/**
 * Transparent mode: a group of ONE backend. The gateway forwards POST, GET (the standalone SSE
 * stream) and DELETE to the backend and pipes the answer back; the backend's own session id,
 * protocol version and event ids pass through untouched. This is the fastest path: no
 * per-request work for features that are off.
 */
import type { BackendInfo } from '../backend.ts';
import { runHooks, type Chain, type HookOutcome } from '../chain.ts';
import type { Context } from '../context.ts';
import { GatewayError } from '../errors.ts';
import type { BackendMetrics } from '../observe/metrics.ts';
import { OutgoingHeaders } from '../outgoing-headers.ts';
import type { BackendHook } from '../plugin.ts';
import { forwardHeaders, type Upstreams } from '../upstream.ts';
import type { McpEndpoint } from './endpoint.ts';
import { receiveMessages, runMessageHooks } from './intake.ts';
import { PipeExchange } from './pipe.ts';
import type { OpenStreams } from './streams.ts';
import { RewriteExchange } from './rewrite.ts';
import type { Pool } from 'undici';

export interface TransparentOptions {
  path: string;
  backend: BackendInfo;
  upstreams: Upstreams;
  chain: Chain;
  metrics: BackendMetrics;
  streams: OpenStreams;
  maxBodyBytes: number;
}

function isPromise(value: unknown): value is Promise<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as Promise<unknown>).then === 'function';
}

export class TransparentEndpoint implements McpEndpoint {
  readonly path: string;
  readonly #backend: BackendInfo;
  readonly #pool: Pool;
  readonly #chain: Chain;
  readonly #metrics: BackendMetrics;
  readonly #streams: OpenStreams;
  readonly #maxBodyBytes: number;
  readonly #backendHooks: BackendHook[] | null;

  constructor(options: TransparentOptions) {
    this.path = options.path;
    this.#backend = options.backend;
    this.#pool = options.upstreams.pool(options.backend);
    this.#chain = options.chain;
    this.#metrics = options.metrics;
    this.#streams = options.streams;
    this.#maxBodyBytes = options.maxBodyBytes;
    this.#backendHooks = options.chain.compileBackend(options.backend);
  }

  handle(ctx: Context): HookOutcome | Promise<HookOutcome> {
    switch (ctx.req.method) {
      case 'POST':
        return this.#post(ctx);
      case 'GET':
        return this.#forward(ctx, 'GET', null);
      case 'DELETE':
        return this.#forward(ctx, 'DELETE', null);
      default:
        throw new GatewayError('method_not_allowed', `method ${ctx.req.method} is not allowed on the MCP endpoint`, {
          headers: { allow: 'GET, POST, DELETE, OPTIONS' },
        });
    }
  }

  async #post(ctx: Context): Promise<HookOutcome> {
    await receiveMessages(ctx, this.#maxBodyBytes);
    const outcome = runMessageHooks(ctx, this.#chain);
    if (outcome !== undefined) {
      const settled = isPromise(outcome) ? await outcome : outcome;
      if (settled !== undefined) return settled;
    }
    const body = ctx.body ?? Buffer.from(JSON.stringify(ctx.message));
    return this.#forward(ctx, 'POST', body);
  }

  #forward(ctx: Context, method: string, body: Buffer | null): HookOutcome | Promise<HookOutcome> {
    const responseHooks = method === 'POST' ? this.#chain.responseHooks(ctx.rpcMethod) : null;
    const list = forwardHeaders(ctx.req, ctx.requestId, responseHooks !== null);
    if (this.#backendHooks !== null) {
      const headers = new OutgoingHeaders(list);
      const outcome = runHooks(this.#backendHooks, ctx, headers);
      if (isPromise(outcome)) {
        return outcome.then((settled) => (settled !== undefined ? settled : this.#send(ctx, method, headers.list, body, responseHooks)));
      }
      if (outcome !== undefined) return outcome;
      return this.#send(ctx, method, headers.list, body, responseHooks);
    }
    return this.#send(ctx, method, list, body, responseHooks);
  }

  #send(ctx: Context, method: string, headers: string[], body: Buffer | null, responseHooks: ReturnType<Chain['responseHooks']>): undefined {
    if (ctx.res.destroyed) return undefined; // the client left while hooks ran
    const exchange =
      responseHooks === null
        ? new PipeExchange(ctx, this.#backend, this.#metrics, this.#streams, method === 'GET')
        : new RewriteExchange(ctx, this.#backend, this.#metrics, this.#streams, responseHooks);
    exchange.dispatch(this.#pool, method, headers, body);
    return undefined;
  }

  async close(): Promise<void> {
    // Streams are closed by the server; the pool by the upstreams owner.
  }

  status(): unknown {
    return { mode: 'transparent', backends: [{ name: this.#backend.name, url: this.#backend.url.href }] };
  }
}
