/**
 * What the verification benchmarks (verify-cpu.ts, verify-instructions.ts) share: the bench
 * issuer (issuer.ts), two access tokens signed by it, a validator whose token cache holds one
 * entry (so the two tokens, alternating, miss every time), and the raw jose call to compare with.
 */
import { exportJWK, generateKeyPair, importJWK, jwtVerify, type CryptoKey, type JWK } from 'jose';
import { createLogger } from '../../core/observe/log.ts';
import { createTokenValidator } from '../../plugins/incoming-auth/validator.ts';
import { AUDIENCE, startBenchIssuer, type BenchAlg } from './issuer.ts';

export interface VerifySetup {
  readonly tokens: readonly [string, string];
  /** Raw jose, with the options the validator's checks amount to. */
  viaJose(token: string): Promise<unknown>;
  viaValidator(token: string): unknown;
  close(): void;
}

/** A key pair as JWKs, to hand to another process (both sides then verify with the same key). */
export async function newKeyPair(alg: BenchAlg): Promise<{ privateJwk: JWK; publicJwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { privateJwk: await exportJWK(privateKey), publicJwk: await exportJWK(publicKey) };
}

export async function startVerifySetup(alg: BenchAlg, keys?: { privateJwk: JWK; publicJwk: JWK }): Promise<VerifySetup> {
  const { privateJwk, publicJwk } = keys ?? (await newKeyPair(alg));
  const privateKey = await importJWK(privateJwk, alg);
  const publicKey = await importJWK(publicJwk, alg);
  const issuerServer = await startBenchIssuer(alg, privateKey as CryptoKey, publicJwk);
  const issuer = issuerServer.url;
  const tokens = [await issuerServer.mint('a'), await issuerServer.mint('b')] as const;
  const validator = await createTokenValidator({ issuer, audience: AUDIENCE, cache: { maxTokens: 1 } }, createLogger('silent'));
  await validator.verify(tokens[0]); // discovery and keys
  const options = { issuer, audience: AUDIENCE, algorithms: [alg], clockTolerance: 30, requiredClaims: ['exp'] };
  return {
    tokens,
    viaJose: (token) => jwtVerify(token, publicKey, options),
    viaValidator: (token) => validator.verify(token),
    close() {
      validator.close();
      issuerServer.close();
    },
  };
}
