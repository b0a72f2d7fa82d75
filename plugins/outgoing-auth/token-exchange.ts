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
  type Principal,
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

        // What a caller's exchange needs per request is remembered, so that a hit costs no hash
        // and no long string compare. By Principal: incoming auth gives every request of a
        // connection the same Principal, so its token is the very string remembered and the
        // subject compare is a pointer compare. By claims beneath it: the verified claims are one
        // object per token while incoming auth keeps it cached, shared by every connection of
        // that token, so a new connection finds the cache key without hashing again. The subject
        // is compared either way: the key answers only the subject it was made for. The header
        // value last written from the cached token is kept too (rebuilt when the cache answers
        // another token: a new exchange after the last one expired).
        const byPrincipal = new WeakMap<Principal, Known>();
        const byClaims = new WeakMap<object, Known>();
        const knownOf = (principal: Principal | null, subject: string): Known => {
          if (principal === null) return { subject, key: ExchangeCache.key(subject, shape), token: '', value: '' };
          const mine = byPrincipal.get(principal);
          if (mine !== undefined && mine.subject === subject) return mine;
          const shared = byClaims.get(principal.claims);
          const key = shared !== undefined && shared.subject === subject ? shared.key : ExchangeCache.key(subject, shape);
          const fresh: Known = { subject, key, token: '', value: '' };
          if (shared === undefined || shared.subject !== subject) byClaims.set(principal.claims, fresh);
          byPrincipal.set(principal, fresh);
          return fresh;
        };

        const withSubject = (ctx: Context, subject: string, headers: OutgoingHeaders): GatewayError | undefined | Promise<GatewayError | undefined> => {
          const known = knownOf(ctx.principal, subject);
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
          // `typeof` first: an instanceof looks up Symbol.hasInstance on every request.
          if (typeof subject === 'string') return withSubject(ctx, subject, headers);
          if (subject instanceof GatewayError) return subject;
          return subject.then((value) => withSubject(ctx, value, headers));
        };
      },
      async stop() {
        cache.clear();
        await Promise.allSettled(clients.map((sts) => sts.close()));
      },
    };
  },
});
