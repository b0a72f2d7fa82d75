/**
 * The token issuer the incoming-auth benchmarks share: discovery and a JWKS with one key on
 * loopback, and access tokens of a realistic shape (RFC 9068 claims plus the usual extras)
 * signed with that key.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, type CryptoKey, type JWK } from 'jose';

export type BenchAlg = 'ES256' | 'RS256';

/** The audience (and resource) the tokens are minted for. */
export const AUDIENCE = 'http://127.0.0.1:4483/mcp';
const KID = 'bench';

export interface BenchIssuer {
  readonly url: string;
  /** A fresh access token; `jti` tells tokens apart. */
  mint(jti: string): Promise<string>;
  close(): void;
}

export async function startBenchIssuer(alg: BenchAlg, privateKey: CryptoKey, publicJwk: JWK): Promise<BenchIssuer> {
  const jwk = { ...publicJwk, kid: KID, alg, use: 'sig' };
  let url = '';
  const server = createServer((req, res) => {
    const body = req.url === '/jwks' ? { keys: [jwk] } : { issuer: url, jwks_uri: `${url}/jwks` };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    mint(jti) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ scope: 'mcp:tools openid profile', client_id: 'mcp-client', email: 'alice@example.com', groups: ['eng', 'mcp-users'], jti })
        .setProtectedHeader({ alg, kid: KID, typ: 'at+jwt' })
        .setIssuer(url)
        .setSubject('d3b07384-d9a0-4c3f-a1b2-7f5e9c0e4a11')
        .setAudience(AUDIENCE)
        .setIssuedAt(now)
        .setExpirationTime(now + 3600)
        .sign(privateKey);
    },
    close: () => server.close(),
  };
}
