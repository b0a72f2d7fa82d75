/**
 * The few Kubernetes API server requests a cluster-resource source makes (a list, a watch), each
 * bounded in time and size.
 *
 * `@kubernetes/client-node` does the part that is hard to get right: the kubeconfig (contexts,
 * CA files, client certificates, exec and token-file credentials, proxies) and the in-cluster
 * service account, whose token it re-reads as Kubernetes rotates it. The requests themselves
 * are made here, with the agent and headers the library prepares, because its own list and watch
 * read without bounds: a response is read whole whatever its size, a watch line is buffered
 * until a newline comes, however long, and a silent watch is never given up.
 *
 * Errors never carry the request's headers (the bearer token): only the status, the API
 * server's own message (cut short) and the URL's path.
 */
import { existsSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { Buffer } from 'node:buffer';
import process from 'node:process';
import { KubeConfig } from '@kubernetes/client-node';
import { jsonValueBound, MAX_SYNCED_JSON_VALUES } from '../model/json-value.ts';
import { SyncFailure } from './source-reader.ts';

/** A failure of one request to the API server. */
export class ClusterApiError extends Error {
  override readonly name = 'ClusterApiError';
  /** The HTTP status (or the `code` of an ERROR watch event); null for a network failure. */
  readonly status: number | null;

  constructor(message: string, status: number | null) {
    super(message);
    this.status = status;
  }
}

const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * The kubeconfig at `path`, or the pod's service account (null). Throws SyncFailure with what to
 * fix.
 */
export function loadKubeConfig(path: string | null): KubeConfig {
  const config = new KubeConfig();
  if (path === null) {
    if (!process.env.KUBERNETES_SERVICE_HOST || !process.env.KUBERNETES_SERVICE_PORT) {
      throw new SyncFailure('not running inside a Kubernetes cluster (KUBERNETES_SERVICE_HOST is not set): set kubernetes.kubeconfig to the path of a kubeconfig file');
    }
    if (!existsSync(IN_CLUSTER_TOKEN)) throw new SyncFailure(`no service account token at ${IN_CLUSTER_TOKEN}: mount one in the pod, or set kubernetes.kubeconfig`);
    config.loadFromCluster();
  } else {
    try {
      config.loadFromFile(path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new SyncFailure(code === 'ENOENT' ? `kubeconfig ${path} does not exist` : `kubeconfig ${path} cannot be read: ${firstLine(code ?? (err as Error).message)}`);
    }
  }
  const cluster = config.getCurrentCluster();
  if (cluster === null) throw new SyncFailure(`kubeconfig ${path ?? '(in-cluster)'} has no current context with a cluster`);
  let server: URL;
  try {
    server = new URL(cluster.server);
  } catch {
    throw new SyncFailure(`kubeconfig ${path ?? '(in-cluster)'}: the cluster's server is not a URL`);
  }
  if (server.protocol !== 'https:' && server.protocol !== 'http:') throw new SyncFailure(`kubeconfig ${path ?? '(in-cluster)'}: the cluster's server must be an https URL`);
  return config;
}

export interface RequestBounds {
  readonly signal: AbortSignal;
  /** Until the response's headers arrive (a list: until its body is read too). */
  readonly timeoutMs: number;
}

export interface WatchHandlers {
  /** One line of the stream (one JSON event); throwing ends the watch with that error. */
  onLine(line: string): void;
  /** The response's headers arrived with 200: the watch is connected. */
  onConnected?(): void;
}

export interface WatchBounds extends RequestBounds {
  /** Longest line accepted (one event: one object). */
  readonly maxLineBytes: number;
  /** The watch is given up when nothing arrives for this long (the server should have ended it). */
  readonly idleTimeoutMs: number;
}

/** A response answered 200, and how to free its connection once read. */
interface OpenResponse {
  readonly response: http.IncomingMessage;
  readonly done: () => void;
}

/** Requests to one API server, with the credentials of one kubeconfig. */
export class ClusterApi {
  readonly #config: KubeConfig;
  readonly #server: string;

  constructor(config: KubeConfig) {
    this.#config = config;
    this.#server = config.getCurrentCluster()!.server.replace(/\/+$/, '');
  }

  /** The JSON of a GET, read up to `maxBytes`. */
  async getJson(path: string, query: Readonly<Record<string, string>>, bounds: RequestBounds & { readonly maxBytes: number }): Promise<unknown> {
    const signal = AbortSignal.any([bounds.signal, AbortSignal.timeout(bounds.timeoutMs)]);
    let got: OpenResponse;
    try {
      got = await this.#get(path, query, signal, bounds.timeoutMs);
    } catch (err) {
      throw asApiError(err, path, signal, bounds.signal);
    }
    const { response, done } = got;
    try {
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of response) {
        size += (chunk as Buffer).length;
        if (size > bounds.maxBytes) throw new ClusterApiError(`the list response of ${path} is larger than ${bounds.maxBytes} bytes`, null);
        chunks.push(chunk as Buffer);
      }
      const body = Buffer.concat(chunks, size);
      // Parsed, JSON takes up to ~20 times its size (`[{},{},…]`): what a page holds is bounded first.
      if (jsonValueBound(body) > MAX_SYNCED_JSON_VALUES) throw new ClusterApiError(`the list response of ${path} holds more than ${MAX_SYNCED_JSON_VALUES} JSON values`, null);
      try {
        return JSON.parse(body.toString('utf8'));
      } catch {
        throw new ClusterApiError(`the API server answered ${path} with something that is not JSON`, null);
      }
    } catch (err) {
      throw asApiError(err, path, signal, bounds.signal);
    } finally {
      done();
    }
  }

  /**
   * Streams a watch until the server ends it (resolves), or it fails, goes silent, is aborted
   * or a handler throws (rejects).
   */
  async watch(path: string, query: Readonly<Record<string, string>>, bounds: WatchBounds, handlers: WatchHandlers): Promise<void> {
    let got: OpenResponse;
    try {
      got = await this.#get(path, { ...query, watch: '1' }, bounds.signal, bounds.timeoutMs);
    } catch (err) {
      throw asApiError(err, path, bounds.signal, bounds.signal);
    }
    const { response, done } = got;
    handlers.onConnected?.();
    let idle: NodeJS.Timeout | null = null;
    const touch = (): void => {
      if (idle !== null) clearTimeout(idle);
      idle = setTimeout(() => response.destroy(new ClusterApiError(`the watch of ${path} sent nothing for ${Math.round(bounds.idleTimeoutMs / 1000)} s`, null)), bounds.idleTimeoutMs);
    };
    // What a handler throws ends the watch as it is (it is not the network's failure).
    let handlerError: unknown = null;
    const deliver = (line: string): void => {
      if (line.trim() === '') return;
      try {
        handlers.onLine(line);
      } catch (err) {
        handlerError = err;
        throw err;
      }
    };
    try {
      touch();
      let pending: Buffer[] = [];
      let pendingBytes = 0;
      for await (const chunk of response) {
        touch();
        let data = chunk as Buffer;
        let newline = data.indexOf(0x0a);
        while (newline !== -1) {
          const line = Buffer.concat([...pending, data.subarray(0, newline)]).toString('utf8');
          pending = [];
          pendingBytes = 0;
          deliver(line);
          data = data.subarray(newline + 1);
          newline = data.indexOf(0x0a);
        }
        if (data.length > 0) {
          pendingBytes += data.length;
          if (pendingBytes > bounds.maxLineBytes) throw new ClusterApiError(`a watch event of ${path} is larger than ${bounds.maxLineBytes} bytes`, null);
          pending.push(data);
        }
      }
      deliver(Buffer.concat(pending).toString('utf8'));
    } catch (err) {
      if (err === handlerError) throw err;
      throw asApiError(err, path, bounds.signal, bounds.signal);
    } finally {
      if (idle !== null) clearTimeout(idle);
      done();
    }
  }

  /** A GET answered 200 (else a ClusterApiError), and how to free its connection. */
  async #get(path: string, query: Readonly<Record<string, string>>, signal: AbortSignal, timeoutMs: number): Promise<OpenResponse> {
    const url = new URL(this.#server + path);
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    const options: https.RequestOptions = {};
    try {
      // The agent (CA, client certificate) and the Authorization header, fresh for each request:
      // token files and exec credentials rotate.
      await this.#config.applyToHTTPSOptions(options);
    } catch (err) {
      throw new ClusterApiError(`the kubeconfig's credentials cannot be used: ${firstLine((err as Error).message)}`, null);
    }
    const agent = options.agent as http.Agent | undefined;
    const done = (): void => agent?.destroy();
    const headers = { ...(options.headers as Record<string, string> | undefined), accept: 'application/json', 'user-agent': 'gatehouse-registry' };
    const send = url.protocol === 'https:' ? https.request : http.request;
    try {
      const response = await new Promise<http.IncomingMessage>((resolvePromise, reject) => {
        // The caller's signal ends the request whenever it comes; the time bound only covers the
        // wait for the headers (a watch then streams for minutes).
        const request = send(url, { ...options, method: 'GET', agent, headers, signal }, (answer) => {
          clearTimeout(timer);
          resolvePromise(answer);
        });
        const timer = setTimeout(() => request.destroy(new ClusterApiError(`the Kubernetes API server did not answer ${path} in time`, null)), timeoutMs);
        request.on('error', (err) => {
          clearTimeout(timer);
          reject(err);
        });
        request.end();
      });
      if (response.statusCode !== 200) {
        const message = await statusMessage(response);
        response.destroy();
        const reason = http.STATUS_CODES[response.statusCode ?? 0];
        throw new ClusterApiError(`the Kubernetes API server answered ${response.statusCode}${reason === undefined ? '' : ` ${reason}`} to ${path}${message === null ? '' : `: ${message}`}`, response.statusCode ?? null);
      }
      return { response, done };
    } catch (err) {
      done();
      throw err;
    }
  }
}

/** The `message` of a Kubernetes Status body, short and on one line (read up to 16 KiB). */
async function statusMessage(response: http.IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response) {
      size += (chunk as Buffer).length;
      if (size > 16 * 1024) break;
      chunks.push(chunk as Buffer);
    }
    const status = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { message?: unknown };
    return typeof status.message === 'string' ? shorten(status.message) : null;
  } catch {
    return null;
  }
}

export function shorten(text: string, max = 300): string {
  const line = text.replace(/[\x00-\x1f\x7f]+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

function firstLine(text: string): string {
  return shorten(text.split('\n')[0] ?? '');
}

function asApiError(err: unknown, path: string, bounded: AbortSignal, caller: AbortSignal): Error {
  if (err instanceof ClusterApiError || err instanceof SyncFailure) return err;
  if (caller.aborted) return new ClusterApiError('stopped', null);
  if (bounded.aborted) return new ClusterApiError(`the Kubernetes API server did not answer ${path} in time`, null);
  const code = (err as NodeJS.ErrnoException).code;
  return new ClusterApiError(`the Kubernetes API server cannot be reached for ${path}: ${code ?? firstLine((err as Error).message ?? String(err))}`, null);
}
