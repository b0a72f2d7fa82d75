/**
 * `VirtualMCPServer.spec.authServerConfig`: the embedded OAuth 2.1 authorization server, on the
 * gateway's own port and origin (the issuer is the gateway's URL). Its routes, relative to the
 * issuer:
 *
 *   GET  /.well-known/oauth-authorization-server   RFC 8414 metadata (also at the issuer path
 *   GET  /.well-known/openid-configuration          appended, RFC 8414 §3.1), served here
 *   GET  /.well-known/jwks.json                     the public signing keys, served here
 *   GET  /oauth/authorize                           ┐
 *   POST /oauth/token                               ├ the provider (provider.ts), through the
 *   POST /oauth/register                            ┘ bridge (bridge.ts)
 *   GET  /oauth/interaction/:uid, /oauth/callback   the login through the upstream providers
 *                                                   (login-chain.ts), behind the same bridge
 *
 * None of them is on the MCP path, and none needs a bearer token.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Buffer } from 'node:buffer';
import { LRUCache } from 'lru-cache';
import {
  type AuthServerConfig,
  type AuthServerEndpointGroup,
  type Context,
  createRedisClient,
  definePlugin,
  type HttpMethod,
  PUBLIC_DOCUMENT_HEADERS,
  Reply,
  type RouteDef,
  waitReady,
} from '@gatehouse-mcp/gateway';
import { ProviderBridge } from './bridge.ts';
import { publicJwks, type ServerKeys } from './keys.ts';
import { EndpointBudgets } from './endpoint-budgets.ts';
import { memoryAdapterClass } from './memory-adapter.ts';
import { LoginChain } from './login-chain.ts';
import { AuthEvents } from './audit-events.ts';
import { MemoryLoginStore, RedisLoginStore, type LoginStore } from './login-store.ts';
import { redisAdapterClass } from './redis-adapter.ts';
import { MemoryRefreshGate, RedisRefreshGate } from './refresh-gate.ts';
import { CALLBACK_PATH, DEFAULT_SCOPES, INTERACTION_PATH, ROUTES } from './routes.ts';
import { UpstreamProvider } from './upstream-providers.ts';
import { IssuerHttp } from '../incoming-auth/issuer-http.ts';
import { MemoryRefreshLock, RedisRefreshLock, UpstreamTokenAccess, type UpstreamTokenHandle } from './upstream-token-access.ts';

/** How long start waits for Redis before it gives up (the gateway does not start). */
const REDIS_READY_MS = 10_000;
/** Time allowed to fetch a Client ID Metadata Document. */
const METADATA_TIMEOUT_MS = 3_000;
/** Client ID Metadata Document fetches at once; more fail at once (the client may try again). */
const MAX_METADATA_FETCHES = 16;
/** A document that could not be reached is not asked for again for this long. */
const METADATA_FAILURE_MS = 30_000;

type MetadataFetch = NonNullable<AuthServerPluginConfig['fetchClientMetadata']>;

/**
 * Client ID Metadata Documents are fetched while an authorization request waits (holding a
 * connection of the bridge): at most MAX_METADATA_FETCHES at once, each time-bound, and a
 * document that could not be reached (timeout, connection) is not asked for again for a while,
 * so slow documents an attacker hosts cannot tie up the server. Remembered per URL, and never
 * for an HTTP answer: otherwise one request for a missing document on a real client's host
 * would lock that client out.
 */
function boundedMetadataFetch(fetch: MetadataFetch): MetadataFetch {
  let inFlight = 0;
  const unreachable = new LRUCache<string, true>({ max: 10_000, ttl: METADATA_FAILURE_MS });
  return async (url, init) => {
    if (unreachable.has(url)) throw new Error(`the client metadata document ${url} could not be reached less than ${METADATA_FAILURE_MS / 1000} s ago`);
    if (inFlight >= MAX_METADATA_FETCHES) throw new Error('too many client metadata documents are being fetched');
    inFlight++;
    try {
      return await fetch(url, { ...init, signal: AbortSignal.timeout(METADATA_TIMEOUT_MS) });
    } catch (err) {
      unreachable.set(url, true);
      throw err;
    } finally {
      inFlight--;
    }
  };
}

export interface AuthServerPluginConfig {
  readonly authServer: AuthServerConfig;
  /** The server's keys (loadServerKeys), shared with incoming auth, which checks its tokens with them. */
  readonly keys: ServerKeys;
  /** The MCP endpoint's URL (incomingAuth.resourceUrl): the resource tokens are issued for. */
  readonly resource: string;
  /** Scopes clients may ask for the MCP endpoint. */
  readonly scopes: readonly string[];
  /** Filled with the accessor of the logins' upstream tokens, for the plugins that present them. */
  readonly upstreamTokens?: UpstreamTokenHandle;
  /** How Client ID Metadata Documents are fetched (default: the guarded fetch; tests give their own). */
  readonly fetchClientMetadata?: (url: string, init: { method: string; headers: Record<string, string>; signal?: AbortSignal }) => Promise<Response>;
}

/** The metadata documents' paths for an issuer whose path is `issuerPath` ('' at the root). */
export function metadataPaths(issuerPath: string): string[] {
  const names = ['oauth-authorization-server', 'openid-configuration'];
  const paths = new Set<string>();
  for (const name of names) {
    paths.add(`/.well-known/${name}${issuerPath}`); // RFC 8414 §3.1: inserted before the issuer's path
    paths.add(`${issuerPath}/.well-known/${name}`); // OpenID Connect Discovery: appended to the issuer
  }
  return [...paths];
}

export const authServer = definePlugin<AuthServerPluginConfig>({
  name: 'auth-server',
  // Its clients, codes, sessions and tokens may live in this process (memory storage): a reload
  // keeps the running server (the config reload refuses a change to what it was built from).
  keptAcrossReloads: true,
  async create(given, host) {
    const config = { ...given, scopes: given.scopes.length > 0 ? given.scopes : DEFAULT_SCOPES };
    const { authServer: settings } = config;
    const issuerPath = new URL(settings.issuer).pathname.replace(/\/$/, '');
    const keys = config.keys;
    // Loaded here, not at import: only a gateway with an authorization server needs oidc-provider.
    const { createProvider, logRefusals, providerHandler } = await import('./provider.ts');
    const storage = settings.storage;
    // Redis: everything the provider and the login keep is shared by the replicas and outlives a restart.
    // Lazy: it connects in start(), so a gateway that fails before (its port taken) holds no socket.
    const redis = storage.type === 'redis' ? createRedisClient(storage, host.log, 'auth-server', true) : null;
    const refreshMs = settings.tokenLifespans.refreshTokenMs;
    const keyPrefix = storage.type === 'redis' ? storage.keyPrefix : '';
    const durable = storage.type === 'redis' && storage.sentinel !== null;
    const legs = { total: settings.maxPendingLogins, perAddress: settings.maxPendingLoginsPerAddress };
    const store: LoginStore = redis === null ? new MemoryLoginStore(refreshMs, legs) : new RedisLoginStore(redis, keyPrefix, refreshMs, durable, legs);
    // A registered client nobody used for as long as a refresh token lives is dropped: it holds
    // no live token, and self-registered clients cannot pile up for ever.
    const clientIdleSeconds = Math.ceil(refreshMs / 1000);
    const clients = { clientIdleSeconds, maxClients: settings.maxClients };
    const adapter = redis === null ? memoryAdapterClass(clients) : redisAdapterClass(redis, keyPrefix, durable, clients);
    const metadataHttp = new IssuerHttp({ issuer: new URL('https://client-metadata.invalid'), allowPrivateIp: false, timeoutMs: METADATA_TIMEOUT_MS });
    const fetchMetadata = boundedMetadataFetch(config.fetchClientMetadata ?? metadataHttp.fetch);
    const refreshGate = redis === null ? new MemoryRefreshGate() : new RedisRefreshGate(redis, keyPrefix);
    const provider = createProvider({ config: settings, keys, resource: config.resource, scopes: config.scopes, adapter, fetch: fetchMetadata, identity: (sub) => store.identity(sub), refreshGate });
    logRefusals(provider, host.log);
    const events = new AuthEvents(host.origin, settings.issuer);
    events.watch(provider);
    // A revoked grant (replayed code or refresh token) takes the upstream tokens of its login along.
    provider.on('grant.revoked', (_ctx: unknown, grantId: string) => {
      store.dropGrant(grantId).catch((err: unknown) => host.log.warn({ err }, 'the upstream tokens of a revoked grant could not be dropped'));
    });
    const upstreams = settings.upstreamProviders.map((upstream, i) => new UpstreamProvider(upstream, i));
    const lock = redis === null ? new MemoryRefreshLock() : new RedisRefreshLock(redis, keyPrefix);
    config.upstreamTokens?.set(new UpstreamTokenAccess(store, upstreams, lock, host.log));
    const chain = new LoginChain({ provider, upstreams, store, issuer: settings.issuer, resource: config.resource, displayName: settings.displayName, scopes: config.scopes, log: host.log, events });
    const providerCallback = providerHandler(provider);
    // The login's two routes are the chain's; everything else is the provider's own.
    const bridge = new ProviderBridge(settings.issuer, (req, res) => {
      const step = loginStep(chain, req, res);
      if (step === null) return providerCallback(req, res);
      step.catch((err: unknown) => {
        host.log.error({ err }, 'the sign-in failed');
        if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8', 'referrer-policy': 'no-referrer' });
        res.end('The sign-in failed. Start again from your application.');
      });
    });
    const jwks = JSON.stringify(publicJwks(keys));
    let metadata = '';

    const forward = (ctx: Context): undefined => bridge.forward(ctx);
    const budgets = new EndpointBudgets(settings.rateLimiting, redis === null ? { type: 'memory' } : { type: 'redis', client: redis, keyPrefix });
    const register = (ctx: Context): undefined => bridge.forwardRewritten(ctx, registrationScope);
    const document = (body: () => string) => (): Reply =>
      new Reply(200, body(), { 'content-type': 'application/json', 'cache-control': 'public, max-age=300', ...PUBLIC_DOCUMENT_HEADERS });
    const preflight = Reply.empty(204, { allow: 'GET, HEAD, OPTIONS', ...PUBLIC_DOCUMENT_HEADERS });
    // A public document: GET for anyone, and the preflight a browser sends when it adds a header.
    const publicDocument = (path: string, body: () => string): RouteDef[] => [
      { method: 'GET', path, auth: false, anyOrigin: true, handler: budgets.guard('metadata', document(body), true) },
      { method: 'OPTIONS', path, auth: false, anyOrigin: true, handler: budgets.guard('metadata', () => preflight, true) },
    ];
    const route = (method: HttpMethod, path: string, group: AuthServerEndpointGroup, handler: RouteDef['handler'], anyOrigin = false): RouteDef =>
      ({ method, path: issuerPath + path, auth: false, anyOrigin, handler: budgets.guard(group, handler, anyOrigin, group === 'login' ? signInUnderWay : null) });
    // Whether a login step belongs to a sign-in in progress: its interaction exists, or its
    // callback answers a leg that waits (asked only once the login group's shared budget is spent).
    const signInUnderWay = async (ctx: Context): Promise<boolean> => {
      try {
        const uid = ctx.params?.['uid'];
        if (uid !== undefined) return (await provider.Interaction.find(uid)) !== undefined;
        const state = new URLSearchParams(ctx.query).get('state');
        return state !== null && state.length <= 512 && (await store.hasLeg(state));
      } catch {
        return false; // the store cannot say: the refusal stands
      }
    };

    // Every route has the budgets of its group (endpoint-budgets.ts); preflights count as metadata.
    const routes: RouteDef[] = [
      ...metadataPaths(issuerPath).flatMap((path) => publicDocument(path, () => metadata)),
      ...publicDocument(issuerPath + ROUTES.jwks, () => jwks),
      route('GET', ROUTES.authorization, 'authorization', forward),
      // Where the provider resumes an authorization once the login is done.
      route('GET', `${ROUTES.authorization}/:uid`, 'login', forward),
      // Called by browser-based clients from their own origin: the provider answers CORS (provider.ts).
      route('POST', ROUTES.token, 'token', forward, true),
      route('OPTIONS', ROUTES.token, 'metadata', forward, true),
      route('POST', ROUTES.registration, 'registration', register, true),
      route('OPTIONS', ROUTES.registration, 'metadata', forward, true),
      route('GET', `${INTERACTION_PATH}/:uid`, 'login', forward),
      route('GET', `${INTERACTION_PATH}/:uid/consent`, 'login', forward),
      route('POST', `${INTERACTION_PATH}/:uid/confirm`, 'login', forward),
      route('GET', `${INTERACTION_PATH}/:uid/callback`, 'login', forward),
      route('GET', CALLBACK_PATH, 'login', forward),
    ];

    const release = async (): Promise<void> => {
      await bridge.stop();
      await Promise.all(upstreams.map((upstream) => upstream.close()));
      // QUIT only to a connection that is up: to one still connecting it would wait in the queue.
      if (redis?.status === 'ready') await redis.quit().catch(() => redis.disconnect());
      else redis?.disconnect();
      await metadataHttp.close();
    };

    return {
      name: 'auth-server',
      routes,
      async start() {
        // A start that fails half way releases what it acquired: the host stops only started plugins.
        try {
          if (redis !== null) await waitReady(redis, REDIS_READY_MS);
          await Promise.all(upstreams.map((upstream) => upstream.start(host.log)));
          await bridge.start();
          metadata = JSON.stringify(await serverMetadata(bridge, settings));
          if (keys.ephemeral.signing || keys.ephemeral.hmac) {
            host.log.warn(
              { missing: [keys.ephemeral.signing ? 'signingKeySecretRefs' : null, keys.ephemeral.hmac ? 'hmacSecretRefs' : null].filter((x) => x !== null) },
              'authServerConfig has no signing keys or HMAC secrets: this process made its own, so a restart invalidates every token, code and refresh token it issued',
            );
          }
          host.log.info({ issuer: settings.issuer }, 'embedded authorization server ready');
        } catch (err) {
          await release();
          throw err;
        }
      },
      stop: release,
    };
  },
});

/**
 * The metadata document: the provider's discovery document, with what Gatehouse adds or
 * changes (`authorizationEndpointBaseUrl` moves only the authorization endpoint).
 */
async function serverMetadata(bridge: ProviderBridge, settings: AuthServerConfig): Promise<Record<string, unknown>> {
  const document = await bridge.get('/.well-known/openid-configuration');
  if (settings.authorizationEndpointBaseUrl !== null) {
    document.authorization_endpoint = new URL(ROUTES.authorization.slice(1), settings.authorizationEndpointBaseUrl.replace(/\/?$/, '/')).href;
  }
  document.code_challenge_methods_supported = ['S256'];
  return document;
}

/**
 * A registration's `scope` as the server takes it (RFC 7591 §2 lets it replace what a client
 * asks): an empty one is dropped, and a given one also allows `openid` and `offline_access`.
 * Clients read `scope` from the resource metadata when they register but from the server's own
 * metadata when they authorize (MCP Inspector 0.15 does), and the provider refuses any requested
 * scope outside the registered ones. Anything that is not a JSON object passes as it came (the
 * provider answers it).
 */
export function registrationScope(body: Buffer): Buffer {
  let document: unknown;
  try {
    document = JSON.parse(body.toString('utf8'));
  } catch {
    return body;
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) return body;
  const fields = document as Record<string, unknown>;
  const scope = fields['scope'];
  if (typeof scope !== 'string') return body;
  const asked = scope.split(' ').filter((s) => s.length > 0);
  if (asked.length === 0) delete fields['scope'];
  else fields['scope'] = [...new Set([...asked, 'openid', 'offline_access'])].join(' ');
  return Buffer.from(JSON.stringify(fields));
}

/** Largest consent form read (a token and a decision). */
const MAX_CONSENT_FORM = 4 * 1024;
const INTERACTION_STEP = new RegExp(`^${INTERACTION_PATH}/([\\w-]{1,128})(/confirm|/callback|/consent)?$`);

/** The login's step for a request the bridge passed on (its path relative to the issuer), or null for the provider's own routes. */
function loginStep(chain: LoginChain, req: IncomingMessage, res: ServerResponse): Promise<void> | null {
  const path = (req.url ?? '/').split('?')[0]!;
  if (path === CALLBACK_PATH && req.method === 'GET') return chain.callback(req, res);
  const match = INTERACTION_STEP.exec(path);
  if (match === null) return null;
  const [, uid, step] = match;
  if (step === undefined && req.method === 'GET') return chain.interaction(req, res);
  if (step === '/consent' && req.method === 'GET') return chain.consent(req, res, uid!);
  if (step === '/callback' && req.method === 'GET') return chain.continue(req, res, uid!);
  if (step === '/confirm' && req.method === 'POST') return readForm(req).then((form) => chain.confirm(req, res, form));
  return null;
}

function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('latin1');
    req.on('data', (chunk: string) => {
      text += chunk;
      if (text.length > MAX_CONSENT_FORM) {
        req.destroy();
        reject(new Error('the consent form is too large'));
      }
    });
    req.on('end', () => resolve(new URLSearchParams(text)));
    req.on('error', reject);
  });
}
