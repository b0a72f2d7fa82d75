/**
 * The example's identity provider: a real OpenID provider (oidc-provider) on loopback, standing
 * for a company's login. Its login page asks only for a name (no password: it is a demo), and it
 * is also the security token service of the `reports` backend: its token endpoint takes the RFC
 * 8693 token-exchange grant, trading one of its own access tokens for a JWT bound to the audience
 * asked for.
 *
 * Two clients: `gatehouse` (the gateway's login leg, redirecting to the gateway's callback) and
 * `gatehouse-exchanger` (the gateway's token exchanges, HTTP Basic).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import Provider, { errors, type KoaContextWithOIDC } from 'oidc-provider';

export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

export interface DemoIdpOptions {
  readonly port: number;
  /** The gateway's `/oauth/callback`. */
  readonly redirectUri: string;
  readonly loginClientSecret: string;
  readonly exchangeClientSecret: string;
}

export interface DemoIdp {
  readonly issuer: string;
  /** Logins completed on its page. */
  readonly logins: number;
  close(): Promise<void>;
}

const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function loginPage(res: ServerResponse, action: string, client: string): void {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' });
  res.end(`<!doctype html><html><head><meta charset="utf-8"><title>Demo IdP: sign in</title></head>
<body style="font-family: sans-serif; max-width: 30em; margin: 3em auto">
<h1>Demo identity provider</h1>
<p><b>${escape(client)}</b> asks you to sign in. This demo takes any name, with no password.</p>
<form method="post" action="${escape(action)}">
<label>Your name <input name="name" autofocus required maxlength="64" value="Alice Example"></label>
<button type="submit">Sign in</button>
</form></body></html>`);
}

/** The form body of a small POST (a name), or null past 4 KiB. */
async function readForm(req: IncomingMessage): Promise<URLSearchParams | null> {
  let body = '';
  for await (const chunk of req) {
    body += String(chunk);
    if (body.length > 4096) return null;
  }
  return new URLSearchParams(body);
}

/** A stable subject for a name, so the same name is the same user across logins. */
function subjectOf(name: string): string {
  return `user-${name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'anonymous'}`;
}

export async function startDemoIdp(o: DemoIdpOptions): Promise<DemoIdp> {
  const server: Server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, '127.0.0.1', resolve);
  });
  const issuer = `http://127.0.0.1:${o.port}`;
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const kid = 'demo-idp-1';
  const names = new Map<string, string>();

  const provider = new Provider(issuer, {
    clients: [
      { client_id: 'gatehouse', client_secret: o.loginClientSecret, redirect_uris: [o.redirectUri], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic', id_token_signed_response_alg: 'ES256' },
      { client_id: 'gatehouse-exchanger', client_secret: o.exchangeClientSecret, grant_types: [TOKEN_EXCHANGE], response_types: [], redirect_uris: [], token_endpoint_auth_method: 'client_secret_basic', id_token_signed_response_alg: 'ES256' },
    ],
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid, alg: 'ES256', use: 'sig' }] },
    claims: { openid: ['sub'], profile: ['name'], email: ['email'] },
    scopes: ['openid', 'profile', 'email', 'offline_access'],
    features: { devInteractions: { enabled: false } },
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 3600, Grant: 3600, RefreshToken: 86_400 },
    findAccount: (_ctx, sub) => {
      const name = names.get(sub) ?? sub;
      return { accountId: sub, claims: () => ({ sub, name, email: `${sub}@demo.example` }) };
    },
    interactions: { url: (_ctx, interaction) => `/login/${interaction.uid}` },
    issueRefreshToken: () => true,
  });

  // The token-exchange grant: a subject token must be a live access token of this provider.
  provider.registerGrantType(
    TOKEN_EXCHANGE,
    async (ctx: KoaContextWithOIDC) => {
      const params = ctx.oidc.params as Record<string, string | undefined>;
      if (params['subject_token_type'] !== ACCESS_TOKEN_TYPE) throw new errors.InvalidRequest('subject_token_type must be an access token');
      const audience = params['audience'];
      if (audience === undefined || audience === '') throw new errors.InvalidTarget('audience is required');
      const subject = await provider.AccessToken.find(params['subject_token'] ?? '');
      if (subject === undefined || subject.isExpired) throw new errors.InvalidGrant('subject_token is not a live access token of this provider');
      const ttl = 300;
      const now = Math.floor(Date.now() / 1000);
      const token = await new SignJWT({ scope: params['scope'], client_id: ctx.oidc.client?.clientId, name: names.get(subject.accountId) })
        .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
        .setIssuer(issuer)
        .setSubject(subject.accountId)
        .setAudience(audience)
        .setIssuedAt(now)
        .setExpirationTime(now + ttl)
        .setJti(randomUUID())
        .sign(privateKey);
      ctx.body = { access_token: token, issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer', expires_in: ttl, ...(params['scope'] === undefined ? {} : { scope: params['scope'] }) };
    },
    ['subject_token', 'subject_token_type', 'requested_token_type', 'audience', 'scope', 'resource'],
  );

  let logins = 0;
  const callback = provider.callback();
  server.on('request', (req, res) => {
    const match = /^\/login\/([A-Za-z0-9_-]+)$/.exec((req.url ?? '').split('?')[0]!);
    if (match === null) return void callback(req, res);
    void (async () => {
      const details = await provider.interactionDetails(req, res);
      if (details.uid !== match[1]) throw new Error('not this browser\'s login');
      if (req.method !== 'POST') return loginPage(res, `/login/${details.uid}`, String(details.params['client_id']));
      const form = await readForm(req);
      const name = form?.get('name')?.trim().slice(0, 64) ?? '';
      if (name === '') return loginPage(res, `/login/${details.uid}`, String(details.params['client_id']));
      const sub = subjectOf(name);
      names.set(sub, name);
      const grant = new provider.Grant({ accountId: sub, clientId: String(details.params['client_id']) });
      grant.addOIDCScope(String(details.params['scope'] ?? 'openid'));
      const grantId = await grant.save();
      logins++;
      await provider.interactionFinished(req, res, { login: { accountId: sub }, consent: { grantId } }, { mergeWithLastSubmission: false });
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/plain' });
      res.end(`login failed: ${err instanceof Error ? err.message : String(err)}`);
    });
  });

  return {
    issuer,
    get logins() {
      return logins;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
