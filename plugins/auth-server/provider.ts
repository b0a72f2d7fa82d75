/**
 * The embedded authorization server's engine: oidc-provider (an OpenID Certified provider) set
 * up as an OAuth 2.1 server for MCP clients. Gatehouse decides only what MCP asks of it:
 *
 *  - clients are public by default (`token_endpoint_auth_method: none`) and register themselves
 *    (RFC 7591); every authorization needs PKCE with S256 (oidc-provider accepts no other);
 *  - an access token is a JWT for one resource (RFC 8707): the MCP endpoint this gateway serves,
 *    which is also the default; any other `resource` is `invalid_target`;
 *  - refresh tokens are issued to clients allowed the grant and rotate on every use; a replayed
 *    code or refresh token is `invalid_grant` and revokes the grant (the provider's own rule),
 *    except a retry, shortly after, of a refresh whose rotation did not complete (refresh-retry.ts);
 *  - lifespans come from `tokenLifespans`; keys from keys.ts; records from the adapter;
 *  - routes sit under the issuer's path: /oauth/authorize, /oauth/token, /oauth/register and
 *    /.well-known/jwks.json; the login itself (the upstream providers) is the interaction.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import Provider, { errors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import requestContext from 'oidc-provider/lib/helpers/als.js';
import internals from 'oidc-provider/lib/helpers/weak_cache.js';
import type { AuthServerConfig, Logger } from '@gatehouse-mcp/gateway';
import type { ServerKeys } from './keys.ts';
import { escapeHtml } from './html.ts';
import type { GateEntry, RefreshGate } from './refresh-gate.ts';
import type { RotationAware } from './refresh-retry.ts';
import { DEFAULT_SCOPES, INTERACTION_PATH, ROUTES } from './routes.ts';

export interface ProviderOptions {
  readonly config: AuthServerConfig;
  readonly keys: ServerKeys;
  /** The MCP endpoint's URL: the one resource tokens are issued for. */
  readonly resource: string;
  /** Scopes a client may ask for the resource (besides openid and offline_access). */
  readonly scopes: readonly string[];
  readonly adapter: NonNullable<Configuration['adapter']>;
  /**
   * How Client ID Metadata Documents (a `client_id` that is an https URL) are fetched: the guarded
   * fetch (no private or special-use addresses, https only, time-bound) unless code gives another.
   */
  readonly fetch: (url: string, init: { method: string; headers: Record<string, string>; signal?: AbortSignal; redirect?: 'manual' }) => Promise<Response>;
  /** Who a subject is (name, email), as the login chain's first provider said. */
  readonly identity: (sub: string) => Promise<{ readonly name?: string; readonly email?: string } | null>;
  /** One rotation at a time per refresh token (refresh-gate.ts). */
  readonly refreshGate: RefreshGate;
}

const seconds = (ms: number): number => Math.max(1, Math.round(ms / 1000));

/**
 * The provider's request handler, which leaves no async hooks running once no request is.
 *
 * Why: the provider keeps each request's context in an AsyncLocalStorage it never disables. On
 * Node 20 a live AsyncLocalStorage runs async hooks for every promise and callback of the
 * process, so after the first sign-in every proxied MCP request paid for them (~4 µs of CPU, the
 * difference between an embedded-server token and an OIDC one in the load benchmark). The
 * provider reads that context only while it handles a request, so the storage is disabled
 * whenever none is under way; its next request enables it again.
 */
export function providerHandler(provider: Provider): (req: IncomingMessage, res: ServerResponse) => void {
  const handle = provider.callback();
  let underWay = 0;
  const done = (): void => {
    if (--underWay === 0) requestContext.disable();
  };
  return (req, res) => {
    underWay++;
    let handled: Promise<void>;
    try {
      // Koa's handler settles once the provider's middleware has run to its end (it answers errors itself).
      handled = Promise.resolve(handle(req, res));
    } catch (err) {
      done();
      throw err;
    }
    handled.then(done, done);
  };
}

export function createProvider(options: ProviderOptions): Provider {
  const { config, keys, resource } = options;
  const lifespans = config.tokenLifespans;
  const issuerPath = new URL(config.issuer).pathname.replace(/\/$/, '');
  const resourceScope = (options.scopes.length > 0 ? options.scopes : DEFAULT_SCOPES).join(' ');
  const configuration: Configuration = {
    adapter: options.adapter,
    jwks: { keys: keys.signing.map((jwk) => ({ ...jwk })) as NonNullable<Configuration['jwks']>['keys'] },
    cookies: { keys: [...keys.hmac] },
    routes: { ...ROUTES },
    // The provider's own scopes, and the MCP endpoint's (the resource's, getResourceServerInfo),
    // which clients name in their registration's `scope` (MCP's scope selection strategy).
    scopes: [...new Set(['openid', 'offline_access', ...resourceScope.split(' ')])],
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: keys.alg,
    },
    pkce: { required: () => true },
    ttl: {
      AccessToken: seconds(lifespans.accessTokenMs),
      AuthorizationCode: seconds(lifespans.authCodeMs),
      RefreshToken: seconds(lifespans.refreshTokenMs),
      IdToken: seconds(lifespans.accessTokenMs),
      Grant: seconds(lifespans.refreshTokenMs),
      Session: seconds(lifespans.refreshTokenMs),
      Interaction: 600,
    },
    rotateRefreshToken: true,
    // Every authorization asks the user and goes through the providers again: no grant of an
    // earlier login is reused silently, so a code always stands for a consent just given and an
    // identity just confirmed (and another user of the same browser is not handed the last one's).
    loadExistingGrant: async (ctx) => {
      const grantId = (ctx.oidc.result as { consent?: { grantId?: string } } | undefined)?.consent?.grantId;
      return grantId === undefined ? undefined : ctx.oidc.provider.Grant.find(grantId);
    },
    findAccount: (_ctx, sub) => ({
      accountId: sub,
      claims: async () => ({ sub, ...(await options.identity(sub)) }),
    }),
    // tsid: the grant's id, the key of the upstream tokens its login stored (login-chain.ts).
    extraTokenClaims: async (_ctx, token) => {
      const grantId = (token as { grantId?: string }).grantId;
      const accountId = (token as { accountId?: string }).accountId;
      const who = accountId === undefined ? null : await options.identity(accountId);
      return { ...(grantId === undefined ? {} : { tsid: grantId }), ...(who?.name === undefined ? {} : { name: who.name }), ...(who?.email === undefined ? {} : { email: who.email }) };
    },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    interactions: { url: (_ctx, interaction) => `${issuerPath}${INTERACTION_PATH}/${interaction.uid}` },
    // An error shown to the user (one that cannot go back to the client): its code and text, escaped.
    renderError: (ctx, out) => {
      ctx.type = 'html';
      ctx.body = `<!doctype html><meta charset="utf-8"><title>Sign-in failed</title><h1>${escapeHtml(String(out['error']))}</h1><p>${escapeHtml(String(out['error_description'] ?? ''))}</p>`;
    },
    // Every fetch the provider makes (Client ID Metadata Documents) goes through the guard.
    fetch: (url, init) => options.fetch(String(url), init as Parameters<ProviderOptions['fetch']>[1]),
    fetchResponseBodyLimits: { 'client_id metadata document': 5 * 1024, jwks_uri: 64 * 1024, sector_identifier_uri: 64 * 1024 },
    // The authorization code flow only: no implicit or hybrid response types.
    responseTypes: ['code'],
    features: {
      // Off: incoming auth checks bearer tokens; a DPoP-bound token would pass without its proof.
      dPoP: { enabled: false },
      // Off: the gateway does not route it, so it is not advertised.
      pushedAuthorizationRequests: { enabled: false },
      // MCP 2025-11-25: a client may name itself by the https URL of its metadata document. The
      // provider fetches it (bounded, cached 30 s to 1 h), requires its client_id to be that URL,
      // and refuses shared secrets in it.
      clientIdMetadataDocument: { enabled: true, ack: 'draft-02', cacheDuration: { min: 30, max: 3600 } },
      devInteractions: { enabled: false },
      // No registration access token: client management is not offered (nor routed).
      registration: { enabled: true, initialAccessToken: false, issueRegistrationAccessToken: false },
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      resourceIndicators: {
        enabled: true,
        // A client that names no resource gets a token for the one this gateway serves.
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (indicator !== resource) throw new errors.InvalidTarget(`this authorization server issues tokens for ${resource} only`);
          return {
            scope: resourceScope,
            audience: resource,
            accessTokenTTL: seconds(lifespans.accessTokenMs),
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: keys.alg } },
          };
        },
      },
    },
  };
  const provider = new Provider(config.issuer, configuration);
  // The gateway forwards to it with X-Forwarded-Proto/Host of the issuer (bridge.ts), never the client's.
  provider.proxy = true;
  // RFC 8252 §7.3: a loopback redirect URI matches on any port, for every client (MCP clients
  // register as web clients but listen on whatever port was free), never another host or path.
  const client = provider.Client.prototype as unknown as { redirectUriAllowed(this: { redirectUris: string[] }, value: string): boolean };
  const exactly = client.redirectUriAllowed;
  client.redirectUriAllowed = function (value) {
    // Codes travel to https or to this machine only: a plain-http URI elsewhere is never a target.
    if (!isSafeRedirect(value)) return false;
    return exactly.call(this, value) || this.redirectUris.some((registered) => sameLoopbackUri(registered, value));
  };
  provider.use(async (ctx, next) => {
    // The bridge strips the issuer's path: the provider builds its URLs (discovery, redirects,
    // cookie paths) under it as under the path koa-mount would have mounted it at.
    if (issuerPath !== '') (ctx as { mountPath?: string }).mountPath = issuerPath;
    // Its pages and redirects carry codes and states in URLs: no page they lead to learns them.
    ctx.set('referrer-policy', 'no-referrer');
    // Browser-based MCP clients register from their own origin. The provider answers CORS for its
    // token endpoint but not for registration, which needs no cookie and no secret: any origin.
    if (ctx.path === ROUTES.registration) {
      ctx.set('access-control-allow-origin', '*');
      if (ctx.method === 'OPTIONS') {
        ctx.set('access-control-allow-methods', 'POST');
        ctx.set('access-control-allow-headers', 'content-type, mcp-protocol-version');
        ctx.set('access-control-max-age', '600');
        ctx.status = 204;
        return;
      }
    }
    // A client that asks for no scope gets the resource's (RFC 6749 §3.3: the server's default),
    // as MCP clients do when the resource metadata lists none.
    if (ctx.path === ROUTES.authorization && ctx.method === 'GET' && (ctx.query['scope'] === undefined || ctx.query['scope'] === '')) {
      ctx.query = { ...ctx.query, scope: resourceScope };
    }
    await next();
    // The provider decides on a secret before applying the client defaults, so a client that did
    // not ask for an auth method is told a secret it can never use: a public client gets none.
    const body = ctx.body as Record<string, unknown> | undefined;
    if (ctx.oidc?.route === 'registration' && body?.['token_endpoint_auth_method'] === 'none') {
      delete body['client_secret'];
      delete body['client_secret_expires_at'];
    }
  });
  // One rotation at a time per refresh token (refresh-gate.ts): the refresh_token grant runs
  // behind the gate; a use that waited for another's rotation is given its answer. The gate
  // opens once the answer is final (below, after the completion mark).
  const gates = new WeakMap<object, Extract<GateEntry, { owner: true }>>();
  const handlers = internals(provider).grantTypeHandlers;
  const refreshGrant = handlers.get('refresh_token');
  if (refreshGrant === undefined) throw new Error('oidc-provider registered no refresh_token grant');
  handlers.set('refresh_token', async (ctx) => {
    const { oidc } = ctx as KoaContext;
    const token = oidc.params?.['refresh_token'];
    const clientId = oidc.client?.clientId;
    if (typeof token !== 'string' || clientId === undefined) return refreshGrant(ctx);
    const entry = await options.refreshGate.enter(clientId, token);
    if (!entry.owner) {
      (ctx as KoaContext).body = structuredClone(entry.answer);
      return;
    }
    gates.set(ctx as object, entry);
    try {
      await refreshGrant(ctx);
    } catch (err) {
      gates.delete(ctx as object);
      await entry.finish(null);
      throw err;
    }
  });
  // A refresh that rotated its token completes once its answer is ready: from then on the old
  // token used again is a replay, not a retry of a rotation that failed (refresh-retry.ts). When
  // the storage cannot take that, the answer is not sent: 503, and the client's retry with its
  // old token rotates again (the successor stored meanwhile was never handed out).
  const refreshTokens = new (options.adapter as unknown as new (model: string) => Partial<RotationAware>)('RefreshToken');
  provider.use(async (ctx, next) => {
    try {
      await next();
      await completeRotation(ctx as KoaContext);
    } finally {
      // The rotation's answer, now final, for the uses of the same token that waited (a failure: none).
      const gate = gates.get(ctx);
      if (gate !== undefined) {
        gates.delete(ctx);
        await gate.finish(ctx.status === 200 && typeof ctx.body === 'object' && ctx.body !== null ? (ctx.body as Record<string, unknown>) : null).catch(() => undefined);
      }
    }
  });
  async function completeRotation(ctx: KoaContext): Promise<void> {
    const rotated = (ctx.oidc?.entities as { RotatedRefreshToken?: { grantId?: string } } | undefined)?.RotatedRefreshToken;
    if (ctx.oidc?.route !== 'token' || ctx.status !== 200 || rotated?.grantId === undefined || refreshTokens.rotated === undefined) return;
    try {
      await refreshTokens.rotated(rotated.grantId);
    } catch (err) {
      ctx.status = 503;
      ctx.set('retry-after', '1');
      ctx.set('cache-control', 'no-store');
      ctx.body = { error: 'temporarily_unavailable', error_description: (err as { error_description?: string }).error_description ?? 'the refresh could not be completed; try again shortly' };
    }
  }
  return provider;
}

type KoaContext = KoaContextWithOIDC;

interface ProviderError {
  readonly error?: string;
  readonly error_description?: string;
  readonly status?: number;
}

/** What the provider's request context says of a request, for a log line (never a token or a code). */
function requestFields(ctx: KoaContext): Record<string, unknown> {
  const oidc = ctx.oidc as { client?: { clientId?: string }; params?: { grant_type?: unknown } } | undefined;
  const grantType = oidc?.params?.grant_type;
  return {
    requestId: ctx.get('x-request-id') || undefined,
    path: ctx.path,
    ...(typeof grantType === 'string' ? { grant_type: grantType.slice(0, 64) } : {}),
    ...(oidc?.client?.clientId === undefined ? {} : { client_id: oidc.client.clientId }),
  };
}

/**
 * Why the provider refused a request, in the log: the access log has only the status, and the
 * client alone heard the OAuth error. A refused token request or registration is info (a client's
 * fault, often a stale token), a failure of the server's own (a 500) is an error with its cause.
 */
export function logRefusals(provider: Provider, log: Logger): void {
  const refused = (msg: string) => (ctx: KoaContext, err: ProviderError) =>
    log.info({ ...requestFields(ctx), error: err.error, error_description: err.error_description, status: err.status }, msg);
  provider.on('grant.error', refused('a token request was refused'));
  provider.on('registration_create.error', refused('a client registration was refused'));
  provider.on('server_error', (ctx: KoaContext, err: unknown) => log.error({ ...requestFields(ctx), err }, 'the authorization server failed a request'));
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** Whether two http loopback URIs are the same but for the port. */
function sameLoopbackUri(registered: string, given: string): boolean {
  let a: URL;
  let b: URL;
  try {
    a = new URL(registered);
    b = new URL(given);
  } catch {
    return false;
  }
  return (
    a.protocol === 'http:' && b.protocol === 'http:' && LOOPBACK_HOSTS.has(a.hostname) && a.hostname === b.hostname &&
    a.pathname === b.pathname && a.search === b.search && a.username === '' && b.username === '' && a.password === '' && b.password === '' && b.hash === ''
  );
}

/** https anywhere, or http to a loopback host (RFC 8252 native clients, local tools). */
function isSafeRedirect(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) || !['http:', 'https:'].includes(url.protocol);
  } catch {
    return false;
  }
}
