/**
 * Which keys of an issuer's JWKS may verify tokens, and with which algorithms. Only public,
 * asymmetric signing keys: symmetric (`oct`) keys and encryption keys are dropped, private
 * members are stripped, and the accepted algorithms are those the keys declare (`alg`), or, for
 * a key without `alg`, the ones its type and curve allow. `none` and every HS* algorithm are
 * therefore never accepted, whatever a token's header says.
 *
 * Keys are imported once, when the set is fetched, for each algorithm they may verify: a
 * verification then hands jose a ready CryptoKey (as fast as raw `jwtVerify` with a key).
 */
import { importJWK, type CryptoKey, type JWK } from 'jose';

export interface KeySet {
  /** The algorithms tokens may be signed with. */
  readonly algorithms: readonly string[];
  readonly algorithmSet: ReadonlySet<string>;
  readonly kids: ReadonlySet<string>;
  readonly size: number;
  /**
   * The keys that may have signed a token with this `kid` and `alg`: the key(s) with that kid,
   * or, for a token without kid, every key of that algorithm (tried in turn). Empty when none.
   */
  candidates(kid: string | undefined, alg: string): readonly CryptoKey[];
}

const RSA_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];
const EC_ALGS: Readonly<Record<string, string>> = { 'P-256': 'ES256', 'P-384': 'ES384', 'P-521': 'ES512' };
const OKP_ALGS: Readonly<Record<string, readonly string[]>> = { Ed25519: ['EdDSA', 'Ed25519'] };
const AKP_ALGS = new Set(['ML-DSA-44', 'ML-DSA-65', 'ML-DSA-87']);
/** Members of a private or symmetric JWK that never belong in a published key set. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k', 'priv'] as const;

/** The asymmetric signature algorithms `jwk` may verify; empty when it is not a usable signing key. */
export function algorithmsOf(jwk: JWK): string[] {
  if (jwk.use !== undefined && jwk.use !== 'sig') return [];
  if (Array.isArray(jwk.key_ops) && !jwk.key_ops.includes('verify')) return [];
  let allowed: readonly string[];
  switch (jwk.kty) {
    case 'RSA':
      allowed = RSA_ALGS;
      break;
    case 'EC': {
      const alg = jwk.crv === undefined ? undefined : EC_ALGS[jwk.crv];
      allowed = alg === undefined ? [] : [alg];
      break;
    }
    case 'OKP':
      allowed = (jwk.crv === undefined ? undefined : OKP_ALGS[jwk.crv]) ?? [];
      break;
    case 'AKP':
      // ML-DSA keys must name their parameter set.
      allowed = typeof jwk.alg === 'string' && AKP_ALGS.has(jwk.alg) ? [jwk.alg] : [];
      break;
    default:
      allowed = []; // `oct` (symmetric) and unknown types
  }
  if (typeof jwk.alg === 'string') return allowed.includes(jwk.alg) ? [jwk.alg] : [];
  return [...allowed];
}

function publicPart(jwk: JWK): JWK {
  const copy: Record<string, unknown> = { ...jwk };
  for (const member of PRIVATE_MEMBERS) delete copy[member];
  return copy as JWK;
}

/** `kid\nalg` (or `\nalg` for every key of that alg) → the keys imported for it. */
type ImportedKeys = Map<string, CryptoKey[]>;

function add(index: ImportedKeys, slot: string, key: CryptoKey): void {
  const list = index.get(slot);
  if (list === undefined) index.set(slot, [key]);
  else list.push(key);
}

/** The usable keys of a fetched JWKS document. Rejects (message safe to log) when there is none. */
export async function keySetOf(json: unknown): Promise<KeySet> {
  const keys = typeof json === 'object' && json !== null ? (json as { keys?: unknown }).keys : undefined;
  if (!Array.isArray(keys)) throw new Error('the JWKS document has no "keys" array');
  let usable = 0;
  const algorithms = new Set<string>();
  const kids = new Set<string>();
  const imported: ImportedKeys = new Map();
  for (const candidate of keys as unknown[]) {
    if (typeof candidate !== 'object' || candidate === null || Array.isArray(candidate)) continue;
    const jwk = publicPart(candidate as JWK);
    let importedAny = false;
    for (const alg of algorithmsOf(jwk)) {
      let key: CryptoKey;
      try {
        key = (await importJWK(jwk, alg)) as CryptoKey;
      } catch {
        continue; // malformed for this algorithm
      }
      // jose refuses RSA keys under 2048 bits when verifying: drop them here, with the others that cannot verify.
      const modulusLength = (key.algorithm as { modulusLength?: number }).modulusLength;
      if (modulusLength !== undefined && modulusLength < 2048) continue;
      importedAny = true;
      algorithms.add(alg);
      add(imported, `\n${alg}`, key);
      if (typeof jwk.kid === 'string') add(imported, `${jwk.kid}\n${alg}`, key);
    }
    if (!importedAny) continue;
    usable++;
    if (typeof jwk.kid === 'string') kids.add(jwk.kid);
  }
  if (usable === 0) throw new Error(`the JWKS document has no usable public signing key (${keys.length} key(s) listed)`);
  return {
    algorithms: [...algorithms],
    algorithmSet: algorithms,
    kids,
    size: usable,
    candidates: (kid, alg) => imported.get(kid === undefined ? `\n${alg}` : `${kid}\n${alg}`) ?? NONE,
  };
}

const NONE: readonly CryptoKey[] = [];
