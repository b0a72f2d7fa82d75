/**
 * A real OpenID provider (oidc-provider) on 127.0.0.1, standing for a company's identity provider
 * upstream of the gateway's authorization server. Its login needs no user: the interaction logs
 * in `user` at once and grants what was asked (or refuses, with `refuse`), so a test drives the
 * whole chain over HTTP. One client, `gatehouse`, whose redirect URI is the gateway's callback.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export interface UpstreamIdp {
  readonly issuer: string;
  readonly provider: Provider;
  /** Logins completed. */
  readonly logins: number;
  /** Set to make the next logins fail with access_denied. */
  refuse: boolean;
  /** Set to refuse refresh tokens (invalid_grant). */
  refuseRefresh: boolean;
  /** Refresh-token grants answered. */
  readonly refreshes: number;
  close(): Promise<void>;
}

export interface UpstreamIdpOptions {
  readonly user: { sub: string; name?: string; email?: string };
  /** The gateway's callback URL. */
  readonly redirectUri: string;
  readonly clientSecret?: string;
  /** Lifetime of its access tokens (default 600 s). */
  readonly accessTokenTtlSeconds?: number;
  /** Its port (default: any free one). */
  readonly port?: number;
}

export async function startUpstreamIdp(options: UpstreamIdpOptions): Promise<UpstreamIdp> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'gatehouse',
        ...(options.clientSecret === undefined ? { token_endpoint_auth_method: 'none' } : { client_secret: options.clientSecret, token_endpoint_auth_method: 'client_secret_post' }),
        redirect_uris: [options.redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      },
    ],
    claims: { openid: ['sub'], profile: ['name'], email: ['email'] },
    scopes: ['openid', 'profile', 'email', 'offline_access', 'repo'],
    features: { devInteractions: { enabled: false } },
    ttl: { AccessToken: options.accessTokenTtlSeconds ?? 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 3600, Grant: 3600, RefreshToken: 3600 },
    findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ ...options.user, sub }) }),
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    issueRefreshToken: () => true,
  });
  const state = { logins: 0, refuse: false, refuseRefresh: false, refreshes: 0 };
  provider.on('grant.success', (ctx) => {
    if (ctx.oidc.params?.['grant_type'] === 'refresh_token') state.refreshes++;
  });
  provider.use(async (ctx, next) => {
    if (state.refuseRefresh && ctx.method === 'POST' && ctx.path === '/token') {
      ctx.status = 400;
      ctx.body = { error: 'invalid_grant', error_description: 'refresh refused by the test' };
      return;
    }
    await next();
  });
  const callback = provider.callback();
  server.on('request', (req, res) => {
    if (!(req.url ?? '').startsWith('/interaction/')) return void callback(req, res);
    void (async () => {
      const details = await provider.interactionDetails(req, res);
      if (state.refuse) {
        await provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'the user said no' }, { mergeWithLastSubmission: false });
        return;
      }
      const grant = new provider.Grant({ accountId: options.user.sub, clientId: String(details.params['client_id']) });
      grant.addOIDCScope(String(details.params['scope'] ?? 'openid'));
      const grantId = await grant.save();
      state.logins++;
      await provider.interactionFinished(req, res, { login: { accountId: options.user.sub }, consent: { grantId } }, { mergeWithLastSubmission: false });
    })().catch((err: unknown) => {
      res.writeHead(500).end(String(err));
    });
  });
  return {
    issuer,
    provider,
    get logins() {
      return state.logins;
    },
    get refuse() {
      return state.refuse;
    },
    set refuse(value: boolean) {
      state.refuse = value;
    },
    get refuseRefresh() {
      return state.refuseRefresh;
    },
    set refuseRefresh(value: boolean) {
      state.refuseRefresh = value;
    },
    get refreshes() {
      return state.refreshes;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
