/**
 * `MCPExternalAuthConfig` of type `upstreamInject{providerName}`: a request to the backend
 * carries `Authorization: Bearer <the access token that provider gave this user at login>`,
 * read from the embedded authorization server's store by the caller's token set id (`tsid`, a
 * claim of the JWTs it issues) and refreshed when about to expire (UpstreamTokenAccess). The
 * client's own token never goes to the backend (the gateway drops it; this sets the backend's).
 *
 * A caller whose token carries no tsid, or whose login holds no token of that provider any more
 * (and none can be refreshed), gets 401 invalid_token "re-authentication required", with the
 * challenge, so the client logs in again.
 */
import { type BackendInfo, type Context, definePlugin, type GatewayError, type OutgoingHeaders } from '@gatehouse-mcp/gateway';
import { reauthenticate, unusableToken } from './errors.ts';
import { isHeaderSafeToken } from './header-safe.ts';
import type { UpstreamTokenHandle } from '../auth-server/upstream-token-access.ts';

export interface UpstreamInjectConfig {
  /** The running authorization server's accessor (filled when it is created). */
  readonly upstreamTokens: UpstreamTokenHandle;
}


export const upstreamInject = definePlugin<UpstreamInjectConfig>({
  name: 'upstream-inject',
  create(config) {
    return {
      name: 'upstream-inject',
      prepareBackend(backend: BackendInfo) {
        const auth = backend.auth;
        if (auth?.type !== 'upstreamInject') return null;
        const provider = auth.providerName;
        // The token last injected and its header value: the callers of one login send the same
        // stored token on every request, so its check and header are made once per token.
        let lastToken: string | null = null;
        let lastValue = '';
        const inject = (token: string, headers: OutgoingHeaders): GatewayError | undefined => {
          if (token !== lastToken) {
            if (!isHeaderSafeToken(token)) return unusableToken(backend.name, `the access token of upstream provider "${provider}"`);
            lastValue = `Bearer ${token}`;
            lastToken = token;
          }
          headers.set('authorization', lastValue);
          return undefined;
        };
        return (ctx: Context, headers: OutgoingHeaders) => {
          const tsid = ctx.principal?.claims['tsid'];
          if (typeof tsid !== 'string' || tsid.length === 0) return reauthenticate(backend.name, 'upstream token is no longer valid; re-authentication required', `backend ${backend.name}: the caller's token names no login of the embedded authorization server`);
          const access = config.upstreamTokens.get();
          // In-process storage and a fresh token: synchronous, as the rest of the request path.
          const fresh = access.freshAccessToken(tsid, provider);
          if (fresh !== undefined) return inject(fresh, headers);
          return access.accessToken(tsid, provider).then((token) => inject(token, headers));
        };
      },
    };
  },
});
