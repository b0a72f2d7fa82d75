/**
 * A real OIDC issuer on loopback for registry tests: a discovery document and a JWKS served over
 * HTTP, and tokens signed with its key (jose), carrying whatever claims a test needs (strings
 * and arrays).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type JWK } from 'jose';

export interface TestIssuer {
  /** The issuer URL (`iss` of its tokens). */
  readonly url: string;
  /** Signs a token for `audience` with `claims` (`sub` defaults to "user"). */
  token(claims: Record<string, unknown>, options?: { audience?: string; expiresIn?: string; issuer?: string }): Promise<string>;
  close(): Promise<void>;
}

export async function startIssuer(audience: string): Promise<TestIssuer> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'test-key', alg: 'ES256', use: 'sig' };
  let url = '';
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/.well-known/openid-configuration') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ issuer: url, jwks_uri: `${url}/jwks`, response_types_supported: ['code'], subject_types_supported: ['public'], id_token_signing_alg_values_supported: ['ES256'] }));
    } else if (path === '/jwks') {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=600' });
      res.end(JSON.stringify({ keys: [jwk] }));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    async token(claims, options = {}) {
      const { sub = 'user', ...rest } = claims;
      return new SignJWT(rest)
        .setProtectedHeader({ alg: 'ES256', kid: 'test-key', typ: 'JWT' })
        .setIssuer(options.issuer ?? url)
        .setAudience(options.audience ?? audience)
        .setSubject(String(sub))
        .setIssuedAt()
        .setExpirationTime(options.expiresIn ?? '10m')
        .sign(privateKey);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
