/**
 * A private signing key as a Secret holds it for the embedded authorization server: PEM (PKCS#8,
 * SEC1 or PKCS#1) or a JWK in JSON. Parsed the same way by `validate` (which names the YAML path
 * of a key it cannot read) and at start, so a config that validates starts.
 */
import { createPrivateKey, createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';

/** The JWS algorithms a key can sign with, by key type and curve. */
export type SigningAlg = 'ES256' | 'ES384' | 'ES512' | 'RS256' | 'EdDSA';

export interface SigningKey {
  /** The private key as a JWK (with `d`), `alg` and `use` set; `kid` is added by the server. */
  readonly jwk: Readonly<Record<string, unknown>>;
  readonly alg: SigningAlg;
}

const EC_ALG: Readonly<Record<string, SigningAlg>> = { 'P-256': 'ES256', 'P-384': 'ES384', 'P-521': 'ES512' };

function algOf(jwk: Record<string, unknown>): SigningAlg | string {
  switch (jwk['kty']) {
    case 'EC':
      return EC_ALG[String(jwk['crv'])] ?? `an EC key on curve ${String(jwk['crv'])}, which cannot sign (P-256, P-384 or P-521 can)`;
    case 'RSA':
      return 'RS256';
    case 'OKP':
      return jwk['crv'] === 'Ed25519' ? 'EdDSA' : `an OKP key on curve ${String(jwk['crv'])}, which cannot sign (Ed25519 can)`;
    default:
      return `a key of type ${String(jwk['kty'])}, which cannot sign`;
  }
}

/** The key in `text`, or why it is not a usable private signing key. */
export function parseSigningKey(text: string): SigningKey | string {
  const trimmed = text.trim();
  let key: KeyObject;
  try {
    key = trimmed.startsWith('{')
      ? createPrivateKey({ key: JSON.parse(trimmed) as JsonWebKey, format: 'jwk' })
      : createPrivateKey(trimmed);
  } catch (err) {
    if (err instanceof SyntaxError) return 'cannot read the signing key: it is neither PEM nor valid JSON';
    return isPublicKey(trimmed)
      ? 'the signing key is a public key: the authorization server signs tokens, so it needs the private key'
      : 'cannot read the signing key: it is not a private key in PEM or JWK form';
  }
  let jwk: Record<string, unknown>;
  try {
    jwk = key.export({ format: 'jwk' }) as Record<string, unknown>;
  } catch {
    // Key types JWK has no form for (DSA, RSA-PSS, DH): none of them signs a JWT here.
    return `the signing key is a ${key.asymmetricKeyType ?? 'unknown'} key, which cannot sign (an EC P-256/384/521, RSA or Ed25519 key can)`;
  }
  if (key.asymmetricKeyType === 'rsa' && (key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) return 'an RSA signing key needs at least 2048 bits';
  const alg = algOf(jwk);
  if (alg !== 'ES256' && alg !== 'ES384' && alg !== 'ES512' && alg !== 'RS256' && alg !== 'EdDSA') return `the signing key is ${alg}`;
  return { jwk: { ...jwk, alg, use: 'sig' }, alg };
}

function isPublicKey(text: string): boolean {
  try {
    createPublicKey(text.startsWith('{') ? { key: JSON.parse(text) as JsonWebKey, format: 'jwk' } : text);
    return true;
  } catch {
    return false;
  }
}
