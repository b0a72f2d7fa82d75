/**
 * The keys of the embedded authorization server. Signing keys (from `signingKeySecretRefs`): the
 * first signs, every one is published in the JWKS and verifies, so a key is rotated by putting
 * the new one first and dropping the old one once its tokens have expired. HMAC secrets (from
 * `hmacSecretRefs`, at least 32 bytes): the first signs the provider's cookies, the rest verify.
 *
 * Without them the server makes its own for this process (an ES256 key, a random secret) and
 * says at start that a restart invalidates every token, code and refresh token it issued.
 */
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import type { JWK } from 'jose';
import { parseSigningKey, type ResolvedSecretRef, type SigningAlg, StartupError } from '@gatehouse-mcp/gateway';

export interface ServerKeys {
  /** Private JWKs with `kid`, `alg` and `use`; the first signs. */
  readonly signing: readonly JWK[];
  /** The algorithm of the first key: what access tokens are signed with. */
  readonly alg: SigningAlg;
  /** Cookie signing secrets; the first signs. */
  readonly hmac: readonly string[];
  /** What was generated for this process only (lost on restart). */
  readonly ephemeral: { readonly signing: boolean; readonly hmac: boolean };
}

/** The members RFC 7638 hashes, in its order, by key type. */
const THUMBPRINT_MEMBERS: Readonly<Record<string, readonly string[]>> = { EC: ['crv', 'kty', 'x', 'y'], RSA: ['e', 'kty', 'n'], OKP: ['crv', 'kty', 'x'] };

/** The RFC 7638 thumbprint of a key: its `kid` here, the same for the same key on every replica. */
function thumbprint(jwk: JWK): string {
  const members = THUMBPRINT_MEMBERS[String(jwk.kty)] ?? [];
  const canonical = JSON.stringify(Object.fromEntries(members.map((name) => [name, (jwk as Record<string, unknown>)[name]])));
  return createHash('sha256').update(canonical).digest('base64url');
}

/** Synchronous (at config time: incoming auth and the provider are given the same keys). */
export function loadServerKeys(signingRefs: readonly ResolvedSecretRef[], hmacRefs: readonly ResolvedSecretRef[]): ServerKeys {
  const signing: JWK[] = [];
  let alg: SigningAlg = 'ES256';
  for (const [i, ref] of signingRefs.entries()) {
    const key = parseSigningKey(ref.value);
    // validate refused these already; a config built in code may not have been validated.
    if (typeof key === 'string') throw new StartupError(`spec.authServerConfig.signingKeySecretRefs[${i}] (Secret ${ref.name} key ${ref.key}): ${key}`);
    const jwk = key.jwk as JWK;
    signing.push({ ...jwk, kid: thumbprint(jwk) });
    if (i === 0) alg = key.alg;
  }
  const ephemeralSigning = signing.length === 0;
  if (ephemeralSigning) {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk: JWK = { ...(privateKey.export({ format: 'jwk' }) as JWK), alg: 'ES256', use: 'sig' };
    signing.push({ ...jwk, kid: thumbprint(jwk) });
  }
  const hmac = hmacRefs.map((ref) => ref.value);
  const ephemeralHmac = hmac.length === 0;
  if (ephemeralHmac) hmac.push(randomBytes(32).toString('base64url'));
  return { signing, alg, hmac, ephemeral: { signing: ephemeralSigning, hmac: ephemeralHmac } };
}

/** The public half of each signing key, as the JWKS publishes it. */
export function publicJwks(keys: ServerKeys): { keys: JWK[] } {
  return {
    keys: keys.signing.map((jwk) => {
      const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, oth: _oth, ...publicPart } = jwk as JWK & { oth?: unknown };
      return publicPart;
    }),
  };
}
