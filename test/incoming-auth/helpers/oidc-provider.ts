/**
 * A real OpenID provider (`oidc-provider`) on 127.0.0.1 for end-to-end tests. Clients:
 *
 *   mcp-client / mcp-secret        client_credentials; access tokens for a resource are JWTs (ES256)
 *   opaque-client / opaque-secret  client_credentials; access tokens are opaque (introspection)
 *   gatehouse / gatehouse-secret   the gateway's own client, for RFC 7662 introspection (JWTs too:
 *                                  a second subject for tests that need two callers)
 *
 * Every resource indicator is accepted, with scope `mcp:tools` and the resource as audience.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

export interface TestProvider {
  readonly issuer: string;
  readonly provider: Provider;
  /** How many introspection requests the provider answered. */
  readonly introspections: number;
  /** A client-credentials access token for `resource` (JWT for mcp-client, opaque for opaque-client). */
  token(resource: string, client?: 'mcp-client' | 'opaque-client' | 'gatehouse', scope?: string): Promise<string>;
  /** Revokes a token (RFC 7009) so that introspection answers `active: false`. */
  revoke(token: string, client?: 'mcp-client' | 'opaque-client'): Promise<void>;
  close(): Promise<void>;
}

const SECRETS = { 'mcp-client': 'mcp-secret', 'opaque-client': 'opaque-secret', gatehouse: 'gatehouse-secret' } as const;

function basic(client: keyof typeof SECRETS): string {
  return 'Basic ' + Buffer.from(`${encodeURIComponent(client)}:${encodeURIComponent(SECRETS[client])}`).toString('base64');
}

async function privateJwk(alg: 'ES256' | 'RS256', kid: string): Promise<Record<string, unknown>> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg, use: 'sig' };
}

export async function startOidcProvider(): Promise<TestProvider> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientCredentials = (client_id: string) => ({
    client_id,
    client_secret: SECRETS[client_id as keyof typeof SECRETS],
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    scope: 'mcp:tools',
  });
  const provider = new Provider(issuer, {
    clients: [clientCredentials('mcp-client'), clientCredentials('opaque-client'), clientCredentials('gatehouse')],
    jwks: { keys: [await privateJwk('RS256', 'rs-1'), await privateJwk('ES256', 'es-1')] },
    scopes: ['mcp:tools'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource, client) => ({
          scope: 'mcp:tools',
          audience: resource,
          accessTokenTTL: 600,
          accessTokenFormat: client.clientId === 'opaque-client' ? 'opaque' : 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
  });
  const callback = provider.callback();
  let introspections = 0;
  server.on('request', (req, res) => {
    if (req.url?.startsWith('/token/introspection') === true) introspections++;
    callback(req, res);
  });

  const post = async (path: string, client: keyof typeof SECRETS, form: Record<string, string>): Promise<Response> =>
    fetch(issuer + path, {
      method: 'POST',
      headers: { authorization: basic(client), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form),
    });

  return {
    issuer,
    provider,
    get introspections() {
      return introspections;
    },
    async token(resource, client = 'mcp-client', scope = 'mcp:tools') {
      const res = await post('/token', client, { grant_type: 'client_credentials', resource, scope });
      const body = (await res.json()) as { access_token?: string; error?: string; error_description?: string };
      if (body.access_token === undefined) throw new Error(`token request failed: ${res.status} ${body.error}: ${body.error_description}`);
      return body.access_token;
    },
    async revoke(token, client = 'opaque-client') {
      const res = await post('/token/revocation', client, { token });
      if (res.status !== 200) throw new Error(`revocation failed: ${res.status}`);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const GATEHOUSE_CLIENT = { id: 'gatehouse', secret: SECRETS.gatehouse } as const;
