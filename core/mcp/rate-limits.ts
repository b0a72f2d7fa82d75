/**
 * `spec.config.rateLimiting` on the request path: which token buckets (base/token-bucket.ts) a
 * client's `tools/call` takes from, and what a refused one is answered. Only `tools/call` is
 * counted, as in ToolHive: limiting initialize, pings, lists or the client's answers would break
 * sessions rather than slow a looping agent down.
 *
 * The buckets of a call: `shared` (everyone), `perUser` (the principal: its issuer and subject;
 * an anonymous caller: its client address, as `server.trustedProxies` resolves it, an IPv6 one by
 * its /64), `perClient`
 * (the token's `client_id`, else `azp`; none: not counted), the called tool's `shared` and
 * `perUser`, and those of the backend it is routed to. A call takes one token from each, or from none.
 *
 * Keys are built from what a client controls (its subject, its address): length-prefixed, so no
 * two identities make one key, and a key longer than MAX_KEY_CHARS is its SHA-256 instead, so an
 * identity of 16 KiB costs what a short one does in the memory store and in Redis. Keys never
 * reach a log or a metric label (metrics count by bucket kind only).
 *
 * Where it runs: after authentication (the principal is known) and after the session's checks
 * and per-user policy (a call the caller may not make, or of a tool that does not exist, spends
 * nothing), before the onMessage hooks and the backend (aggregate/pipeline.ts, and the
 * transparent endpoint).
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { RateBound } from '../base/rate-limit.ts';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { TokenBuckets, type BucketLimit, type BucketRefusal } from '../base/token-bucket.ts';
import { GatewayError } from '../base/errors.ts';
import { isPromise } from '../base/thenable.ts';
import type { RateLimitConfig } from '../config/rate-limiting.ts';
import type { Context } from '../plugin-api/context.ts';
import { limitKey } from '../http/client-address.ts';
import type { CounterChild } from '../observe/fast-metrics.ts';
import type { GatewayMetrics } from '../observe/metrics.ts';
import type { JsonRpcId, JsonRpcMessage, JsonRpcResponse } from '../protocol/jsonrpc.ts';

/** The JSON-RPC error ToolHive answers a limited call with (its code mirrors HTTP 429). */
export const RATE_LIMITED_CODE = 429;
export const RATE_LIMITED_MESSAGE = 'Rate limit exceeded';

/** Longer keys are hashed: what a key costs does not grow with what a client sends. */
export const MAX_KEY_CHARS = 200;

/** A call refused: when to try again (whole seconds, at least 1). */
export interface RateLimited {
  readonly retryAfterSeconds: number;
}

type Scope = 'shared' | 'perUser' | 'perClient';
type Target = 'server' | 'tool' | 'backend';

interface Bucket {
  /** Its place among the limits' buckets (the slot of its key in a principal's cached keys). */
  readonly index: number;
  readonly limit: BucketLimit;
  readonly scope: Scope;
  /** Written before the caller's part of the key (none for a shared bucket). */
  readonly prefix: string;
  readonly refused: CounterChild;
}

/** A principal's bucket keys (null: it names no client), by bucket index. */
interface KeptKeys {
  readonly subject: string;
  readonly issuer: string | null;
  readonly keys: (string | null)[];
}

function bounded(key: string): string {
  return key.length <= MAX_KEY_CHARS ? key : `#${createHash('sha256').update(key).digest('base64url')}`;
}

/** The caller as perUser buckets know it: the principal, or an anonymous caller's address. */
function userKey(ctx: Context): string {
  const principal = ctx.principal;
  // An IPv6 client by its /64: one subscriber holds the whole prefix, and would otherwise have 2^64 buckets.
  if (principal === null) return bounded(`a${limitKey(ctx.clientAddress)}`);
  const issuer = principal.issuer ?? '';
  return bounded(`p${issuer.length}:${issuer}${principal.subject}`);
}

function clientKey(ctx: Context): string | null {
  const claims = ctx.principal?.claims;
  const id = claims?.['client_id'] ?? claims?.['azp'];
  return typeof id === 'string' && id !== '' ? bounded(id) : null;
}

function calledTool(message: JsonRpcMessage): string | null {
  const name = (message as { params?: { name?: unknown } }).params?.name;
  return typeof name === 'string' ? name : null;
}

export class RateLimits {
  readonly #buckets: TokenBuckets;
  /** The buckets every call takes from, in the order a refusal is looked for. */
  readonly #server: readonly Bucket[];
  readonly #tools: ReadonlyMap<string, readonly Bucket[]>;
  readonly #backends: ReadonlyMap<string, readonly Bucket[]>;
  /**
   * A principal's keys, by bucket index, kept with its verified claims (the token cache gives a
   * token's requests one claims object): a key built anew is a new string, which the store must
   * flatten and hash on every call (~0.4 µs); a kept one has its hash. They are used only for
   * the same issuer and subject: a plugin may give several principals one claims object.
   */
  readonly #keysOf = new WeakMap<object, KeptKeys>();

  private constructor(buckets: TokenBuckets, server: Bucket[], tools: Map<string, Bucket[]>, backends: Map<string, Bucket[]>) {
    this.#buckets = buckets;
    this.#server = server;
    this.#tools = tools;
    this.#backends = backends;
  }

  /** The limits of `config` on `buckets`; null when there are none (the request path then asks nothing). */
  static of(config: RateLimitConfig | null, buckets: TokenBuckets, metrics: GatewayMetrics): RateLimits | null {
    if (config === null) return null;
    let index = 0;
    const bucket = (limit: RateBound | null, scope: Scope, target: Target, prefix: string): Bucket[] =>
      limit === null ? [] : [{ index: index++, limit, scope, prefix, refused: metrics.rateLimited(scope, target) }];
    const server = [...bucket(config.shared, 'shared', 'server', 's'), ...bucket(config.perUser, 'perUser', 'server', 'u:'), ...bucket(config.perClient, 'perClient', 'server', 'c:')];
    const tools = new Map<string, Bucket[]>();
    for (const tool of config.tools) {
      const name = bounded(tool.name);
      tools.set(tool.name, [...bucket(tool.shared, 'shared', 'tool', `ts${name.length}:${name}`), ...bucket(tool.perUser, 'perUser', 'tool', `tu${name.length}:${name}`)]);
    }
    const backends = new Map<string, Bucket[]>();
    for (const entry of config.workloads) {
      const name = bounded(entry.workload);
      backends.set(entry.workload, [...bucket(entry.shared, 'shared', 'backend', `bs${name.length}:${name}`), ...bucket(entry.perUser, 'perUser', 'backend', `bu${name.length}:${name}`)]);
    }
    return server.length === 0 && tools.size === 0 && backends.size === 0 ? null : new RateLimits(buckets, server, tools, backends);
  }

  /**
   * Takes the tokens of one client message sent to `backend` (the routed one; null: not known):
   * null when it may go on (it is no `tools/call`, or every bucket had a token), else when to
   * try again. Synchronous on memory buckets.
   */
  check(ctx: Context, message: JsonRpcMessage, backend: string | null): RateLimited | null | Promise<RateLimited | null> {
    // With or without an id: a backend may run a tools/call sent as a notification (a transparent gateway passes it on).
    if (!('method' in message) || message.method !== 'tools/call') return null;
    const name = calledTool(message);
    const tool = name === null || this.#tools.size === 0 ? undefined : this.#tools.get(name);
    const ofBackend = backend === null || this.#backends.size === 0 ? undefined : this.#backends.get(backend);
    if (this.#server.length === 0 && tool === undefined && ofBackend === undefined) return null;
    const applying = tool === undefined && ofBackend === undefined ? this.#server : [...this.#server, ...(tool ?? []), ...(ofBackend ?? [])];
    const keys: string[] = [];
    const limits: BucketLimit[] = [];
    const taken: Bucket[] = [];
    let kept: KeptKeys | null | undefined;
    for (const bucket of applying) {
      let key: string | null = bucket.prefix;
      if (bucket.scope !== 'shared') {
        if (kept === undefined) kept = this.#kept(ctx);
        const known = kept?.keys[bucket.index];
        key = known !== undefined ? known : callerKey(ctx, bucket, kept);
        if (key === null) continue;
      }
      keys.push(key);
      limits.push(bucket.limit);
      taken.push(bucket);
    }
    // Only a perClient bucket, and a token naming no client: nothing to take.
    if (keys.length === 0) return null;
    const refusal = this.#buckets.take(keys, limits);
    return isPromise(refusal) ? refusal.then((settled) => limited(settled, taken)) : limited(refusal, taken);
  }

  /** The keys kept for the caller's principal (null: anonymous, nothing kept). */
  #kept(ctx: Context): KeptKeys | null {
    const principal = ctx.principal;
    if (principal === null) return null;
    const kept = this.#keysOf.get(principal.claims);
    if (kept !== undefined && kept.subject === principal.subject && kept.issuer === principal.issuer) return kept;
    const made: KeptKeys = { subject: principal.subject, issuer: principal.issuer, keys: [] };
    this.#keysOf.set(principal.claims, made);
    return made;
  }

  /**
   * `check` of each message of a batch, in order: null for every message that may go on. One
   * after another, not all at once: once a bucket refused, the batch's other calls of it are
   * refused without a round trip (TokenBuckets), so a batch of thousands of calls asks Redis
   * about as often as its tokens allow, not once per call.
   */
  checkBatch(ctx: Context, batch: readonly JsonRpcMessage[], backend: string | null): (RateLimited | null)[] | Promise<(RateLimited | null)[]> {
    const outcomes: (RateLimited | null)[] = [];
    for (let i = 0; i < batch.length; i++) {
      const outcome = this.check(ctx, batch[i]!, backend);
      if (isPromise(outcome)) return this.#checkRest(ctx, batch, backend, outcomes, i, outcome);
      outcomes.push(outcome);
    }
    return outcomes;
  }

  async #checkRest(ctx: Context, batch: readonly JsonRpcMessage[], backend: string | null, outcomes: (RateLimited | null)[], at: number, pending: Promise<RateLimited | null>): Promise<(RateLimited | null)[]> {
    outcomes.push(await pending);
    for (let i = at + 1; i < batch.length; i++) outcomes.push(await this.check(ctx, batch[i]!, backend));
    return outcomes;
  }
}

/** The key of a perUser or perClient bucket for this caller (null: no client id), kept in `kept` when given. */
function callerKey(ctx: Context, bucket: Bucket, kept: KeptKeys | null): string | null {
  let key: string | null;
  if (bucket.scope === 'perUser') key = bucket.prefix + userKey(ctx);
  else {
    const client = clientKey(ctx);
    key = client === null ? null : bucket.prefix + client;
  }
  if (kept !== null) kept.keys[bucket.index] = key;
  return key;
}

function limited(refusal: BucketRefusal | null, taken: readonly Bucket[]): RateLimited | null {
  if (refusal === null) return null;
  taken[refusal.index]!.refused.value++;
  return { retryAfterSeconds: Math.max(1, Math.ceil(refusal.retryAfterMs / 1000)) };
}

/** How often a Redis that cannot answer the buckets is logged, at most. */
const FALLBACK_LOG_MS = 60_000;

/**
 * The token buckets of a virtual MCP server, for the life of the process: in Redis when its
 * sessions are (so every replica sharing them shares the buckets; keys `<keyPrefix>ratelimit:<name>:`),
 * else in this process. While Redis cannot answer, each process counts alone (logged once a minute).
 */
export function bucketsFor(name: string, redis: { readonly client: Redis; readonly keyPrefix: string } | undefined, log: Logger): TokenBuckets {
  let logged = -Infinity;
  const onFallback = (err: unknown): void => {
    const now = performance.now();
    if (now - logged < FALLBACK_LOG_MS) return;
    logged = now;
    log.warn({ error: err instanceof Error ? err.message : String(err) }, 'rate limits: Redis cannot answer, each process counts alone meanwhile');
  };
  return new TokenBuckets(redis === undefined ? null : { client: redis.client, keyPrefix: `${redis.keyPrefix}ratelimit:${name}:` }, { onFallback });
}

/** A refused call answered on HTTP: 429, Retry-After, and a JSON-RPC error body (the transparent path). */
export function rateLimitedError(refusal: RateLimited): GatewayError {
  return new GatewayError('rate_limited', RATE_LIMITED_MESSAGE, {
    headers: { 'retry-after': String(refusal.retryAfterSeconds) },
    extra: { retryAfterSeconds: refusal.retryAfterSeconds },
  });
}

/** A refused call's JSON-RPC error response (inside a session, and for each refused message of a batch). */
export function rateLimitedResponse(id: JsonRpcId, refusal: RateLimited): JsonRpcResponse {
  return { jsonrpc: '2.0', id, error: { code: RATE_LIMITED_CODE, message: RATE_LIMITED_MESSAGE, data: { error: 'rate_limited', retryAfterSeconds: refusal.retryAfterSeconds } } };
}
