/**
 * What the verification benchmarks (verify-cpu.ts, verify-instructions.ts) share: an issuer on
 * loopback serving discovery and a JWKS with one key, two access tokens of a realistic shape
 * signed by it, a validator whose token cache holds one entry (so the two tokens, alternating,
 * miss every time), and the raw jose call to compare with.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, importJWK, jwtVerify, SignJWT, type JWK } from 'jose';
import { createLogger } from '../../core/observe/log.ts';
import type { TokenValidator } from '../../plugins/incoming-auth/contract.ts';
import { createTokenValidator } from '../../plugins/incoming-auth/validator.ts';

export type VerifyAlg = 'ES256' | 'RS256';

const AUDIENCE = 'http://127.0.0.1:4483/mcp';

export interface VerifySetup {
  readonly tokens: readonly [string, string];
  readonly validator: TokenValidator;
  /** Raw jose, with the options the validator's checks amount to. */
  viaJose(token: string): Promise<unknown>;
  viaValidator(token: string): unknown;
  close(): void;
}

/** A key pair as JWKs, to hand to another process (both sides then verify with the same key). */
export async function newKeyPair(alg: VerifyAlg): Promise<{ privateJwk: JWK; publicJwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { privateJwk: await exportJWK(privateKey), publicJwk: await exportJWK(publicKey) };
}

export async function startVerifySetup(alg: VerifyAlg, keys?: { privateJwk: JWK; publicJwk: JWK }): Promise<VerifySetup> {
  const { privateJwk, publicJwk } = keys ?? (await newKeyPair(alg));
  const privateKey = await importJWK(privateJwk, alg);
  const publicKey = await importJWK(publicJwk, alg);
  const jwk = { ...publicJwk, kid: 'bench', alg, use: 'sig' };
  let issuer = '';
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(req.url === '/jwks' ? { keys: [jwk] } : { issuer, jwks_uri: `${issuer}/jwks` }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const now = Math.floor(Date.now() / 1000);
  const mint = (jti: string): Promise<string> =>
    new SignJWT({ scope: 'mcp:tools openid profile', client_id: 'mcp-client', email: 'alice@example.com', groups: ['eng', 'mcp-users'], jti })
      .setProtectedHeader({ alg, kid: 'bench', typ: 'at+jwt' })
      .setIssuer(issuer)
      .setSubject('d3b07384-d9a0-4c3f-a1b2-7f5e9c0e4a11')
      .setAudience(AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + 3600)
      .sign(privateKey);
  const tokens = [await mint('a'), await mint('b')] as const;
  const validator = await createTokenValidator({ issuer, audience: AUDIENCE, cache: { maxTokens: 1 } }, createLogger('silent'));
  await validator.verify(tokens[0]); // discovery and keys
  const options = { issuer, audience: AUDIENCE, algorithms: [alg], clockTolerance: 30, requiredClaims: ['exp'] };
  return {
    tokens,
    validator,
    viaJose: (token) => jwtVerify(token, publicKey, options),
    viaValidator: (token) => validator.verify(token),
    close() {
      validator.close();
      server.close();
    },
  };
}
