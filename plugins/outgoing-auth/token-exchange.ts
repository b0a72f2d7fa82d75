/**
 * `MCPExternalAuthConfig` of type `tokenExchange`: the request to the backend carries a token the
 * backend's own STS minted for it (RFC 8693), in exchange for the caller's token, or, with
 * `subjectProviderName`, for the access token the caller's login obtained from that upstream
 * provider (the embedded authorization server's store, refreshed when about to expire).
 *
 * Exchanged tokens are cached (exchange-cache.ts): one exchange per user, backend audience and
 * token lifetime, not one per request. A cache hit is synchronous.
 */
import {
  type BackendInfo,
  type Context,
  definePlugin,
  GatewayError,
  type OutgoingHeaders,
  type TokenExchangeCacheConfig,
  type TokenExchangeConfig,
} from '@gatehouse-mcp/gateway';
import type { UpstreamTokenHandle } from '../auth-server/upstream-token-access.ts';
import { reauthenticate } from './errors.ts';
import { ExchangeCache, ExchangeMetrics, exchangeShape } from './exchange-cache.ts';
import { StsClient } from './sts-client.ts';

export interface TokenExchangePluginConfig {
  readonly cache: TokenExchangeCacheConfig;
  /** The embedded authorization server's accessor, for `subjectProviderName`; null without one. */
  readonly upstreamTokens: UpstreamTokenHandle | null;
}

/** A caller's claims as one backend's exchange knows them: its cache key, and the header value of the token last found. */
interface Known {
  readonly subject: string;
  readonly key: string;
  token: string;
  value: string;
}

/** Where the exchange of one backend gets its subject token from. */
type Subject = (ctx: Context) => string | GatewayError | Promise<string>;

export const tokenExchange = definePlugin<TokenExchangePluginConfig>({
  name: 'token-exchange',
  create(config, host) {
    const cache = new ExchangeCache(config.cache, new ExchangeMetrics(host.metrics));
    const clients: StsClient[] = [];

    function subjectOf(exchange: TokenExchangeConfig, backend: string): Subject {
      const provider = exchange.subjectProviderName;
      if (provider === null) {
        return (ctx) =>
          ctx.principal?.token ?? reauthenticate(backend, 'a token is required: the backend\'s credential is exchanged for it', `backend ${backend}: the caller presented no token to exchange`);
      }
      const upstream = config.upstreamTokens;
      if (upstream === null) throw new Error(`backend ${backend}: subjectProviderName "${provider}" needs the embedded authorization server`);
      return (ctx) => {
        const tsid = ctx.principal?.claims['tsid'];
        if (typeof tsid !== 'string' || tsid.length === 0) {
          return reauthenticate(backend, 'upstream token is no longer valid; re-authentication required', `backend ${backend}: the caller's token names no login of the embedded authorization server`);
        }
        return upstream.get().accessToken(tsid, provider);
      };
    }

    return {
      name: 'token-exchange',
      prepareBackend(backend: BackendInfo) {
        const auth = backend.auth;
        if (auth?.type !== 'tokenExchange') return null;
        const sts = new StsClient(auth, backend.name);
        clients.push(sts);
        const shape = exchangeShape(auth);
        const subjectOfCaller = subjectOf(auth, backend.name);
        const header = auth.externalTokenHeaderName ?? 'authorization';

        // The caller's verified claims are one object per token while incoming auth keeps it cached:
        // its cache key is remembered with it, so a hit costs no hash (the subject is still compared),
        // and so is the header value last written from the cached token (rebuilt when the cache
        // answers another token: a new exchange after the last one expired).
        const keys = new WeakMap<object, Known>();
        const knownOf = (ctx: Context, subject: string): Known => {
          const claims = ctx.principal?.claims;
          const known = claims === undefined ? undefined : keys.get(claims);
          if (known !== undefined && known.subject === subject) return known;
          const fresh: Known = { subject, key: ExchangeCache.key(subject, shape), token: '', value: '' };
          if (claims !== undefined) keys.set(claims, fresh);
          return fresh;
        };

        const withSubject = (ctx: Context, subject: string, headers: OutgoingHeaders): GatewayError | undefined | Promise<GatewayError | undefined> => {
          const known = knownOf(ctx, subject);
          const key = known.key;
          const cached = cache.get(key);
          if (cached !== undefined) {
            if (cached !== known.token) {
              known.value = `Bearer ${cached}`;
              known.token = cached;
            }
            headers.set(header, known.value);
            return undefined;
          }
          return cache.obtain(key, () => sts.exchange(subject)).then((token) => {
            headers.set(header, `Bearer ${token}`);
            return undefined;
          });
        };

        return (ctx: Context, headers: OutgoingHeaders) => {
          const subject = subjectOfCaller(ctx);
          if (subject instanceof GatewayError) return subject;
          return typeof subject === 'string' ? withSubject(ctx, subject, headers) : subject.then((value) => withSubject(ctx, value, headers));
        };
      },
      async stop() {
        cache.clear();
        await Promise.allSettled(clients.map((sts) => sts.close()));
      },
    };
  },
});
