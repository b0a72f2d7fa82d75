/**
 * How the provider is mounted on the gateway's own port and origin. oidc-provider is a Koa
 * application: it needs node:http's request and response objects, which Gatehouse's own server
 * does not make (it has its own, lighter ones). So the provider listens on a loopback port of its
 * own, and the gateway forwards the authorization server's routes to it through its upstream
 * client, as it would to a backend: the same code on either server engine, and nothing of it on
 * the MCP path.
 *
 * The loopback listener answers only requests that carry this process's random bridge secret
 * (anyone else on the machine gets a 404), and the gateway sets X-Forwarded-Proto and -Host from
 * the issuer, never from the client, so the provider builds its URLs from the configured issuer.
 * The client's own headers (cookies of the login, Authorization of the token endpoint) pass;
 * hop-by-hop ones do not; every value is checked at the socket as on any upstream request.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Buffer } from 'node:buffer';
import {
  backendInfo,
  type BackendInfo,
  type BackendMetrics,
  type BodySink,
  type Context,
  currentRequest,
  Exchange,
  GatewayError,
  Pool,
  type RequestRecord,
  runInRequest,
  startReading,
  writeToClient,
} from '@gatehouse-mcp/gateway';
import { IssuerHttp } from '../incoming-auth/issuer-http.ts';

const SECRET_HEADER = 'x-gatehouse-bridge';
/** Which gateway request a forwarded one is (the provider's work, its calls to identity providers, is that request's: request-scope.ts). */
const SCOPE_HEADER = 'x-gatehouse-bridge-scope';
/** Largest request body the authorization server takes (registration documents, token forms). */
export const MAX_BRIDGE_BODY = 64 * 1024;
/** Headers of the client's request that do not cross (hop-by-hop, or set by the bridge). */
const NOT_FORWARDED = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'transfer-encoding', 'te', 'trailer', 'upgrade',
  'host', 'content-length', 'forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-forwarded-port', 'x-request-id', SECRET_HEADER, SCOPE_HEADER,
]);
/** Forwarded requests remembered for the provider's scope at most (more than the pool's connections can carry at once). */
const MAX_SCOPED = 4096;
/** Headers of the provider's response the gateway sets itself. */
const NOT_RETURNED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'date', 'x-request-id']);

/** Metrics of the bridge's upstream exchanges: not a backend, so not counted as one. */
const NO_METRICS = { ok: () => undefined, outcome: () => undefined } as unknown as BackendMetrics;

export class ProviderBridge implements BodySink<Context> {
  readonly #server: Server;
  readonly #secret = randomBytes(32).toString('base64url');
  readonly #forwardedProto: string;
  readonly #forwardedHost: string;
  /** The prefix of the issuer's path, stripped before the provider sees a path. */
  readonly #issuerPath: string;
  #pool: Pool | null = null;
  #backend: BackendInfo | null = null;
  /** The gateway requests being forwarded while the requests are scoped, by their SCOPE_HEADER value. */
  readonly #scoped = new Map<string, RequestRecord>();
  #scopeSequence = 0;

  constructor(issuer: string, handler: (req: IncomingMessage, res: ServerResponse) => void) {
    const url = new URL(issuer);
    this.#forwardedProto = url.protocol.slice(0, -1);
    this.#forwardedHost = url.host;
    this.#issuerPath = url.pathname.replace(/\/$/, '');
    const expected = Buffer.from(this.#secret, 'latin1');
    this.#server = createServer((req, res) => {
      try {
        // Compared as the bytes received (latin1): a header of other characters, whatever its
        // length in UTF-16, is compared byte for byte, or refused on its byte length.
        const given = req.headers[SECRET_HEADER];
        const bytes = typeof given === 'string' ? Buffer.from(given, 'latin1') : null;
        if (bytes === null || bytes.length !== expected.length || !timingSafeEqual(bytes, expected)) {
          res.writeHead(404, { connection: 'close' }).end();
          return;
        }
        this.#handle(handler, req, res);
      } catch {
        // Nothing on this loopback listener may end the process.
        res.destroy();
      }
    });
  }

  /** Runs the provider on a forwarded request, as work of the gateway request it came from when that is known. */
  #handle(handler: (req: IncomingMessage, res: ServerResponse) => void, req: IncomingMessage, res: ServerResponse): void {
    const key = req.headers[SCOPE_HEADER];
    const record = typeof key === 'string' ? this.#scoped.get(key) : undefined;
    if (record === undefined) {
      handler(req, res);
      return;
    }
    this.#scoped.delete(key as string);
    runInRequest(record, () => handler(req, res));
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      // exclusive: in a worker of `server.workers` a listen is otherwise the primary's, one port
      // shared by every worker's bridge, and a worker's request could reach another's (which
      // refuses it: its secret is another).
      this.#server.listen({ port: 0, host: '127.0.0.1', exclusive: true }, () => resolve());
    });
    const { port } = this.#server.address() as AddressInfo;
    const url = new URL(`http://127.0.0.1:${port}/`);
    this.#pool = new Pool(url, { connections: 64, keepAliveMs: 4_000, connectTimeoutMs: 2_000 });
    this.#backend = backendInfo('authorization server', url.href, 30_000);
  }

  /** The loopback port the provider listens on (null before start). */
  get internalPort(): number | null {
    const address = this.#server.address();
    return address === null || typeof address === 'string' ? null : address.port;
  }

  async stop(): Promise<void> {
    this.#pool?.close();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /**
   * A JSON document of the provider (its discovery document), fetched as the gateway sees it.
   * Through IssuerHttp's thread, not this thread's fetch: one fetch here at start-up would cost
   * every later request (plugins/incoming-auth/README.md).
   */
  async get(path: string): Promise<Record<string, unknown>> {
    if (this.#backend === null) throw new Error('the authorization server is not started');
    const http = new IssuerHttp({ issuer: new URL(this.#backend.url), allowPrivateIp: false, timeoutMs: 10_000 });
    try {
      const headers = { 'x-forwarded-proto': this.#forwardedProto, 'x-forwarded-host': this.#forwardedHost, [SECRET_HEADER]: this.#secret };
      const { json } = await http.getJson(new URL(path.slice(1), this.#backend.url).href, headers);
      if (json === null || typeof json !== 'object' || Array.isArray(json)) throw new Error(`the provider answered ${path} with no JSON object`);
      return json as Record<string, unknown>;
    } catch (err) {
      throw new Error(`the provider's ${path}: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      await http.close();
    }
  }

  /** A route handler: the request goes to the provider, its path relative to the issuer. */
  forward(ctx: Context): undefined {
    if (ctx.req.method === 'GET' || ctx.req.method === 'HEAD') {
      this.#send(ctx, null);
      return undefined;
    }
    startReading(ctx.req, MAX_BRIDGE_BODY, this, ctx);
    return undefined;
  }

  /** As forward, with the request's body changed by `rewrite` (read whole first) before the provider sees it. */
  forwardRewritten(ctx: Context, rewrite: (body: Buffer) => Buffer): undefined {
    startReading(ctx.req, MAX_BRIDGE_BODY, { body: (c: Context, body: Buffer) => this.#send(c, rewrite(body)), bodyFailed: (c: Context, error: GatewayError) => this.bodyFailed(c, error) }, ctx);
    return undefined;
  }

  body(ctx: Context, body: Buffer): void {
    this.#send(ctx, body);
  }

  bodyFailed(ctx: Context, error: GatewayError): void {
    ctx.fail(error);
  }

  #send(ctx: Context, body: Buffer | null): void {
    if (this.#pool === null || this.#backend === null) {
      ctx.fail(new GatewayError('not_ready', 'the authorization server is not started'));
      return;
    }
    const url = ctx.req.url ?? '/';
    // The issuer's path prefix is the gateway's business: the provider's routes start at "/".
    const path = this.#issuerPath !== '' && url.startsWith(this.#issuerPath) ? url.slice(this.#issuerPath.length) || '/' : url;
    const raw = ctx.req.rawHeaders;
    const headers: string[] = [];
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!.toLowerCase();
      if (!NOT_FORWARDED.has(name)) headers.push(name, raw[i + 1]!);
    }
    headers.push('x-forwarded-proto', this.#forwardedProto, 'x-forwarded-host', this.#forwardedHost, SECRET_HEADER, this.#secret);
    // The request's id as the gateway logs it, so the provider's log lines name the same request.
    headers.push('x-forwarded-for', ctx.clientAddress, 'x-request-id', ctx.requestId);
    const record = currentRequest();
    let key: string | null = null;
    if (record !== undefined) {
      key = String(++this.#scopeSequence);
      this.#scoped.set(key, record);
      // A request cancelled before it was sent is never taken: the oldest entries go past a bound.
      if (this.#scoped.size > MAX_SCOPED) this.#scoped.delete(this.#scoped.keys().next().value!);
      headers.push(SCOPE_HEADER, key);
    }
    new BridgeExchange(ctx, { ...this.#backend, path }, key === null ? null : () => this.#scoped.delete(key)).dispatch(this.#pool, ctx.req.method ?? 'GET', headers, body);
  }
}

/** The provider's answer, streamed back to the client with the gateway's hop headers. */
class BridgeExchange extends Exchange {
  readonly #ctx: Context;
  /** Forgets its scope entry, had the provider never taken the request (the listener refused it, the exchange failed). */
  readonly #unscope: (() => void) | null;

  constructor(ctx: Context, backend: BackendInfo, unscope: (() => void) | null) {
    super(backend, NO_METRICS);
    this.#ctx = ctx;
    this.#unscope = unscope;
    ctx.inflight = this;
  }

  protected head(status: number, headers: string[]): boolean {
    const list: string[] = [];
    for (let i = 0; i < headers.length; i += 2) {
      if (!NOT_RETURNED.has(headers[i]!.toLowerCase())) list.push(headers[i]!, headers[i + 1]!);
    }
    list.push('x-request-id', this.#ctx.requestId);
    this.#ctx.res.writeHead(status, list);
    return true;
  }

  protected data(chunk: Buffer): boolean {
    return writeToClient(this.#ctx.res, chunk, this);
  }

  protected end(): void {
    this.#unscope?.();
    this.#ctx.res.end();
    if (this.#ctx.inflight === this) this.#ctx.inflight = null;
  }

  protected fail(error: GatewayError): void {
    this.#unscope?.();
    if (this.#ctx.inflight === this) this.#ctx.inflight = null;
    this.#ctx.fail(error);
  }
}
