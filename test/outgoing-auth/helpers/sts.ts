/**
 * A real RFC 8693 security token service for the tests: an `oidc-provider` on 127.0.0.1 with the
 * token-exchange grant registered (it authenticates the client, client_secret_basic, and answers
 * OAuth errors itself). A subject token it can verify is exchanged for an ES256 JWT bound to the
 * requested audience, with the subject's `sub`; the test chooses how subjects are verified, how
 * long minted tokens live, and whether the service refuses, fails or stalls.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, exportJWK, generateKeyPair, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import Provider, { errors } from 'oidc-provider';
import type { TestProvider } from '../../incoming-auth/helpers/oidc-provider.ts';

export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const STS_CLIENT = { id: 'gatehouse-exchanger', secret: 'exchanger-secret' } as const;

/** What the STS was asked, per token-exchange request that passed client authentication. */
export interface ExchangeRequest {
  readonly subjectToken: string;
  readonly subjectTokenType: string;
  readonly requestedTokenType: string | undefined;
  readonly audience: string | undefined;
  readonly scope: string | undefined;
  readonly client: string;
}

export interface StsOptions {
  /** The subject a subject token stands for, or null when it is not acceptable. */
  readonly verifySubject: (token: string) => Promise<string | null>;
}

export interface TestSts {
  readonly issuer: string;
  readonly tokenUrl: string;
  readonly requests: ExchangeRequest[];
  /** Lifetime of minted tokens (seconds). */
  ttlSeconds: number;
  /** Leave `expires_in` out of the answer (the lifetime is then only the JWT's `exp`). */
  omitExpiresIn: boolean;
  /** Refuse every subject with invalid_grant. */
  refuse: boolean;
  /** Answer 503 with an HTML page, as a load balancer in front of a dead STS does. */
  unavailable: boolean;
  /** Wait this long before answering. */
  delayMs: number;
  /** The claims of a token it minted, after checking its signature. */
  verify(token: string): Promise<JWTPayload>;
  close(): Promise<void>;
}

export async function startSts(options: StsOptions): Promise<TestSts> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const signing = { ...(await exportJWK(privateKey)), kid: 'sts-1', alg: 'ES256', use: 'sig' };

  const provider = new Provider(issuer, {
    clients: [
      { client_id: STS_CLIENT.id, client_secret: STS_CLIENT.secret, grant_types: [TOKEN_EXCHANGE], response_types: [], redirect_uris: [], token_endpoint_auth_method: 'client_secret_basic', id_token_signed_response_alg: 'ES256' },
    ],
    jwks: { keys: [signing] },
    features: { devInteractions: { enabled: false } },
  });

  const sts: TestSts = {
    issuer,
    tokenUrl: `${issuer}/token`,
    requests: [],
    ttlSeconds: 300,
    omitExpiresIn: false,
    refuse: false,
    unavailable: false,
    delayMs: 0,
    async verify(token) {
      return (await jwtVerify(token, publicKey, { issuer })).payload;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  provider.registerGrantType(
    TOKEN_EXCHANGE,
    async (ctx) => {
      const params = ctx.oidc.params as Record<string, string | undefined>;
      const subjectToken = params['subject_token'] ?? '';
      sts.requests.push({
        subjectToken,
        subjectTokenType: params['subject_token_type'] ?? '',
        requestedTokenType: params['requested_token_type'],
        audience: params['audience'],
        scope: params['scope'],
        client: ctx.oidc.client?.clientId ?? '',
      });
      if (sts.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, sts.delayMs));
      if (sts.unavailable) {
        ctx.status = 503;
        ctx.type = 'text/html';
        ctx.body = '<html><body>503 Service Unavailable</body></html>';
        return;
      }
      if (params['subject_token_type'] !== 'urn:ietf:params:oauth:token-type:access_token') throw new errors.InvalidRequest('unsupported subject_token_type');
      if (params['audience'] === undefined) throw new errors.InvalidTarget('audience is required');
      const subject = sts.refuse ? null : await options.verifySubject(subjectToken);
      if (subject === null) throw new errors.InvalidGrant('subject_token is not valid');
      const now = Math.floor(Date.now() / 1000);
      const accessToken = await new SignJWT({ scope: params['scope'], client_id: STS_CLIENT.id })
        .setProtectedHeader({ alg: 'ES256', kid: 'sts-1', typ: 'at+jwt' })
        .setIssuer(issuer)
        .setSubject(subject)
        .setAudience(params['audience'])
        .setIssuedAt(now)
        .setExpirationTime(now + sts.ttlSeconds)
        .setJti(randomUUID())
        .sign(privateKey);
      ctx.body = {
        access_token: accessToken,
        issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        token_type: 'Bearer',
        ...(sts.omitExpiresIn ? {} : { expires_in: sts.ttlSeconds }),
        ...(params['scope'] === undefined ? {} : { scope: params['scope'] }),
      };
    },
    ['subject_token', 'subject_token_type', 'requested_token_type', 'audience', 'scope', 'resource', 'actor_token', 'actor_token_type'],
  );

  const callback = provider.callback();
  server.on('request', (req, res) => callback(req, res));
  return sts;
}

/** An MCPExternalAuthConfig of type tokenExchange against `sts`. */
export function exchangeYaml(name: string, sts: TestSts, audience: string, extra = ''): string {
  return (
    `apiVersion: gatehouse.dev/v1alpha1\nkind: MCPExternalAuthConfig\nmetadata: {name: ${name}}\nspec:\n  type: tokenExchange\n  tokenExchange:\n` +
    `    tokenUrl: "${sts.tokenUrl}"\n    clientId: ${STS_CLIENT.id}\n    clientSecretRef: {name: sts, key: secret}\n    audience: ${audience}\n    scopes: [${audience}.read]\n${extra}`
  );
}

export const STS_SECRET = `apiVersion: v1\nkind: Secret\nmetadata: {name: sts}\nstringData: {secret: ${STS_CLIENT.secret}, key: k-123}`;

/** The subject of a JWT of `provider`, verified against its JWKS; null when it does not verify. */
export function subjectVerifier(provider: TestProvider): (token: string) => Promise<string | null> {
  const jwks = createRemoteJWKSet(new URL(`${provider.issuer}/jwks`));
  return async (token) => {
    try {
      return (await jwtVerify(token, jwks, { issuer: provider.issuer })).payload.sub ?? null;
    } catch {
      return null;
    }
  };
}
