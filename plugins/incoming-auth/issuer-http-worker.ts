/**
 * The thread that makes the gateway's requests to issuers (discovery, JWKS, introspection, token
 * exchange, upstream identity providers), for IssuerHttp (issuer-http.ts).
 *
 * Why a thread of its own: V8 keeps type feedback per function, and the functions of Node's
 * streams, events and sockets are shared by everything in an isolate. A few requests of undici's
 * fetch (web streams, AbortSignals, sockets with undici's own fields) or of node:http at start-up
 * leave the property loads in those functions megamorphic for the life of the process, and
 * every proxied request then pays for it: callgrind counted 142k instructions a request for the
 * anonymous transparent row, and 162k once three fetches had run in the same process at start-up
 * (186k after three node:http requests), but 141k when the three ran in a worker. Here, undici
 * only ever shares an isolate with itself.
 *
 * One undici Agent per IssuerHttp (its CA, its address policy, its size cap), made when the
 * main thread declares it. A fetch's answer is read whole, bounded on the wire (the agent's
 * maxResponseSize) and once decompressed (boundedBody), and sent back with its body
 * transferred, not copied. Requests ask for no content coding (`accept-encoding: identity`).
 */
import { parentPort } from 'node:worker_threads';
import { rootCertificates } from 'node:tls';
import { Agent, fetch as undiciFetch } from 'undici';
// Only the address guard, not the whole core: this thread needs nothing else of it.
import { guardedLookup } from '@gatehouse-mcp/gateway/address-guard';
import { reasonOf } from './fetch-reason.ts';

/** An IssuerHttp's agent: what undici needs to connect as the issuer rules say. */
export interface AgentSpec {
  readonly allowPrivate: boolean;
  readonly allowLoopback: boolean;
  readonly ca: string | undefined;
  readonly timeoutMs: number;
  readonly maxBytes: number;
}

export interface FetchSpec {
  readonly url: string;
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly body: string | Uint8Array | null;
  /** getJson refuses a redirect; openid-client's fetch gets it as it is (`manual`). */
  readonly redirect: 'error' | 'manual';
  /** The request's own time limit, ms; the caller's signal may end it sooner (an `abort` message). */
  readonly timeoutMs: number;
}

export type ToWorker =
  | { readonly type: 'agent'; readonly agent: number; readonly spec: AgentSpec }
  | { readonly type: 'fetch'; readonly id: number; readonly agent: number; readonly spec: FetchSpec }
  | { readonly type: 'abort'; readonly id: number }
  | { readonly type: 'close'; readonly agent: number };

/** Where a fetch failed: before an answer came, or while its body was read. */
export type FailedPhase = 'request' | 'body';

export type FromWorker =
  | { readonly type: 'answer'; readonly id: number; readonly status: number; readonly statusText: string; readonly headers: [string, string][]; readonly body: Uint8Array }
  | { readonly type: 'failed'; readonly id: number; readonly phase: FailedPhase; readonly status: number | null; readonly reason: string; readonly timeout: boolean; readonly code: string | null }
  | { readonly type: 'closed'; readonly agent: number };

/** The deepest cause's message: undici wraps network errors in "fetch failed". */
function isTimeout(err: unknown): boolean {
  return err instanceof Error && (err.name === 'TimeoutError' || (err.cause instanceof Error && err.cause.name === 'TimeoutError'));
}

/** The deepest `code` of the error's causes (undici's UND_ERR_*, the guard's, Node's), for callers that tell timeouts apart. */
function codeOf(err: unknown): string | null {
  let code: string | null = null;
  for (let current = err, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    const own = (current as { code?: unknown }).code;
    if (typeof own === 'string') code = own;
  }
  return code;
}

/** A body past the cap, counted as decompressed: undici's maxResponseSize counts the bytes on the wire only. */
class TooLarge extends Error {
  constructor(max: number) {
    super(`the answer exceeded max size (${max} bytes, decompressed)`);
  }
}

/**
 * The answer's body, read whole but never past `max` bytes after decompression: a 1 MiB gzip or
 * brotli body can unpack to a gigabyte, which would be held outside V8's heap (where this
 * thread's resourceLimits do not reach) and then handed to the main thread.
 */
async function boundedBody(body: ReadableStream<Uint8Array> | null, max: number): Promise<Uint8Array> {
  if (body === null) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      throw new TooLarge(max);
    }
    chunks.push(value);
  }
  const whole = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    whole.set(chunk, at);
    at += chunk.byteLength;
  }
  return whole;
}

const port = parentPort;
if (port === null) throw new Error('issuer-http-worker.ts runs as a worker thread (issuer-http.ts starts it)');

const agents = new Map<number, { readonly agent: Agent; readonly maxBytes: number }>();
const inFlight = new Map<number, AbortController>();

function agentOf(spec: AgentSpec): Agent {
  return new Agent({
    connect: {
      timeout: spec.timeoutMs,
      lookup: guardedLookup({ allowPrivate: spec.allowPrivate, allowLoopback: spec.allowLoopback }),
      ...(spec.ca === undefined ? {} : { ca: [...rootCertificates, spec.ca] }),
    },
    headersTimeout: spec.timeoutMs,
    bodyTimeout: spec.timeoutMs,
    maxResponseSize: spec.maxBytes,
    connections: 4,
  });
}

async function run(id: number, { agent, maxBytes }: { readonly agent: Agent; readonly maxBytes: number }, spec: FetchSpec): Promise<void> {
  const controller = new AbortController();
  inFlight.set(id, controller);
  const signal = AbortSignal.any([controller.signal, AbortSignal.timeout(spec.timeoutMs)]);
  let phase: FailedPhase = 'request';
  let status: number | null = null;
  try {
    const headers = { ...spec.headers, 'accept-encoding': 'identity' };
    const res = await undiciFetch(spec.url, { dispatcher: agent, method: spec.method, headers, body: spec.body, redirect: spec.redirect, signal });
    status = res.status;
    phase = 'body';
    const body = await boundedBody(res.body as ReadableStream<Uint8Array> | null, maxBytes);
    const answer: FromWorker = { type: 'answer', id, status: res.status, statusText: res.statusText, headers: [...res.headers], body };
    port!.postMessage(answer, [body.buffer as ArrayBuffer]);
  } catch (err) {
    const failed: FromWorker = { type: 'failed', id, phase, status, reason: reasonOf(err), timeout: isTimeout(err), code: codeOf(err) };
    port!.postMessage(failed);
  } finally {
    inFlight.delete(id);
  }
}

port.on('message', (message: ToWorker) => {
  switch (message.type) {
    case 'agent':
      agents.set(message.agent, { agent: agentOf(message.spec), maxBytes: message.spec.maxBytes });
      return;
    case 'fetch': {
      const agent = agents.get(message.agent);
      if (agent === undefined) {
        port.postMessage({ type: 'failed', id: message.id, phase: 'request', status: null, reason: 'the issuer client is closed', timeout: false, code: null } satisfies FromWorker);
        return;
      }
      void run(message.id, agent, message.spec);
      return;
    }
    case 'abort':
      inFlight.get(message.id)?.abort();
      return;
    case 'close': {
      const entry = agents.get(message.agent);
      agents.delete(message.agent);
      const done = (): void => port.postMessage({ type: 'closed', agent: message.agent } satisfies FromWorker);
      if (entry === undefined) done();
      else entry.agent.close().then(done, done);
      return;
    }
  }
});
