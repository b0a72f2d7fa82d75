/**
 * The bearer-token validator (contract.ts), shared by vMCP incoming auth and the registry server.
 *
 *   verify(token)
 *     ├─ cache hit (the token's signature → that very token's result, until exp): returned synchronously
 *     ├─ same token already being verified: that promise (concurrent first uses share one check)
 *     └─ miss: a JWT (3 parts) → signature and claims against the issuer's JWKS (jwt.ts);
 *              an opaque token → RFC 7662 introspection when client credentials are set;
 *              then cached until its exp (an introspected one for at most a minute, so a
 *              revocation is seen; one the issuer refused is remembered for a few seconds).
 *
 * Issuer metadata is discovered once (discovery.ts) and retried at most once per cooldown after
 * a failure; keys live in the JWKS cache (jwks-cache.ts). A token naming an unknown `kid`
 * triggers one rate-limited key refetch before it is refused.
 */
import { jwtVerify, type JWTPayload } from 'jose';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { GatewayError } from '@gatehouse-mcp/gateway';
import type { TokenValidator, TokenValidatorOptions, VerifiedToken } from './contract.ts';
import { discoverIssuer, type IssuerMetadata } from './discovery.ts';
import { invalidToken, issuerUnavailable } from './errors.ts';
import { Introspector } from './introspection.ts';
import { reasonOf } from './fetch-reason.ts';
import { IssuerHttp } from './issuer-http.ts';
import { JwksCache } from './jwks-cache.ts';
import { jwtParts, JwtCheck, UnknownKeyError, type JwtExpectations } from './jwt.ts';
import type { KeySet } from './key-set.ts';
import { tokenCacheKey, VerifiedTokenCache } from './token-cache.ts';
import { validatorSettings, type ValidatorSettings } from './validator-options.ts';

/** A verification under way: the token it is for, and its promise (set once it has started). */
interface Pending {
  readonly token: string;
  verification: Promise<VerifiedToken> | null;
}

/** The JWKS "URL" of keys known in this process (TokenValidatorOptions.localKeys). */
const IN_PROCESS = 'in-process:jwks';

class OidcTokenValidator implements TokenValidator {
  readonly #settings: ValidatorSettings;
  readonly #log: Logger;
  readonly #http: IssuerHttp;
  readonly #tokens: VerifiedTokenCache;
  /** Verifications under way, by cache slot: the token (a slot is shared only by that token) and its promise. */
  readonly #pending = new Map<string, Pending>();
  readonly #jwks: JwksCache;
  /** Opaque tokens introspection refused, by cache slot: the token and the 401 (never a 503). */
  readonly #refused: LRUCache<string, { readonly token: string; readonly refusal: GatewayError }> | null;
  #metadata: Promise<IssuerMetadata> | null = null;
  /** The metadata once discovered, and the JWT expectations derived from it. */
  #known: IssuerMetadata | null = null;
  #expect: JwtExpectations | null = null;
  #metadataFailedAt = Number.NEGATIVE_INFINITY;
  #introspector: Introspector | null = null;
  #closed = false;

  constructor(settings: ValidatorSettings, log: Logger) {
    this.#settings = settings;
    this.#log = log;
    this.#http = new IssuerHttp({
      issuer: settings.issuerUrl,
      ca: settings.ca,
      bearerToken: settings.fetchBearerToken,
      allowPrivateIp: settings.allowPrivateIp,
      timeoutMs: settings.fetchTimeoutMs,
    });
    this.#tokens = new VerifiedTokenCache({ max: settings.maxTokens, ...(settings.injectedClock ? { now: settings.now } : {}) });
    this.#refused =
      settings.clientSecret === undefined || settings.introspectionRefusedMs <= 0
        ? null
        : new LRUCache({ max: settings.maxTokens, ttl: settings.introspectionRefusedMs, ...(settings.injectedClock ? { perf: { now: settings.now }, ttlResolution: 0 } : {}) });
    const localKeys = settings.localKeys;
    this.#jwks = new JwksCache({
      fetch: async (uri) => {
        if (localKeys !== null && uri === IN_PROCESS) return { json: localKeys, cacheControl: `max-age=${settings.jwksMaxAgeMs / 1000}` };
        const { json, cacheControl } = await this.#http.getJson(uri);
        return { json, cacheControl };
      },
      now: settings.now,
      log,
      minAgeMs: settings.jwksMinAgeMs,
      maxAgeMs: settings.jwksMaxAgeMs,
      defaultAgeMs: settings.jwksDefaultAgeMs,
      cooldownMs: settings.cooldownMs,
    });
  }

  verify(token: string): VerifiedToken | Promise<VerifiedToken> {
    const key = tokenCacheKey(token);
    const cached = this.#tokens.get(key, token);
    if (cached !== undefined) return cached;
    const pending = this.#pending.get(key);
    if (pending !== undefined) {
      if (pending.token === token) return pending.verification!;
      return this.#verifyAndCache(token, key, null); // another token in the same slot: checked on its own
    }
    // Registered before it starts: a verification that fails before its first await runs its
    // `finally` right away, which must find (and remove) this entry, not precede it.
    const entry: Pending = { token, verification: null };
    this.#pending.set(key, entry);
    return (entry.verification = this.#verifyAndCache(token, key, entry));
  }

  async #verifyAndCache(token: string, key: string, registered: Pending | null): Promise<VerifiedToken> {
    try {
      const parts = jwtParts(token);
      let verified: VerifiedToken;
      if (parts === 3) {
        // The usual case (issuer known, keys fresh) awaits jose and nothing else: one async layer
        // of ours between the caller and jose, since each costs more CPU than the checks (jwt.ts).
        const keys = (this.#expect === null ? undefined : this.#jwks.fresh(this.#known!.jwksUri)) ?? (await this.#keysForJwt());
        const check = new JwtCheck(keys, this.#expect!, this.#settings.now());
        let payload: JWTPayload;
        try {
          ({ payload } = await jwtVerify(token, check.keyFor, check.options));
        } catch (err) {
          payload = await (err instanceof UnknownKeyError ? this.#withRefetchedKeys(token) : check.afterRejection(err, token));
        }
        verified = check.accept(payload);
      } else if (parts === 5) {
        throw invalidToken('encrypted tokens (JWE) are not accepted');
      } else if (this.#settings.clientSecret === undefined) {
        throw invalidToken('the token is not a JWT (and introspection of opaque tokens is not configured)');
      } else {
        const refused = this.#refused?.get(key);
        if (refused !== undefined && refused.token === token) throw refused.refusal;
        let introspected: VerifiedToken;
        try {
          introspected = await this.#introspect(token);
        } catch (err) {
          // The issuer's answer, not its absence: a 503 is never remembered.
          if (err instanceof GatewayError && err.code === 'invalid_token') this.#refused?.set(key, { token, refusal: err });
          throw err;
        }
        verified = { ...introspected, validUntil: Math.min(introspected.expiresAt * 1000, this.#settings.now() + this.#settings.introspectionMaxAgeMs) };
      }
      this.#tokens.set(key, token, verified);
      return verified;
    } finally {
      if (registered !== null && this.#pending.get(key) === registered) this.#pending.delete(key);
    }
  }

  /** The issuer's keys when its metadata or keys must be fetched first (which also sets the JWT expectations). */
  async #keysForJwt(): Promise<KeySet> {
    const metadata = this.#known ?? (await this.#issuerMetadata());
    this.#expect ??= { issuer: metadata.issuer, audience: this.#settings.audience, clockToleranceSeconds: this.#settings.clockToleranceSeconds };
    return this.#jwks.fresh(metadata.jwksUri) ?? (await this.#call(() => this.#jwks.keys(metadata.jwksUri)));
  }

  /** The token names a `kid` the keys lack: they are refetched (rate-limited) and the token tried once more. */
  async #withRefetchedKeys(token: string): Promise<JWTPayload> {
    const unknownKid = (): GatewayError => invalidToken('the token is signed with a key the issuer does not publish (unknown kid)');
    const fresh = await this.#call(() => this.#jwks.refreshForUnknownKey(this.#known!.jwksUri));
    if (fresh === null) throw unknownKid();
    const check = new JwtCheck(fresh, this.#expect!, this.#settings.now());
    try {
      return (await jwtVerify(token, check.keyFor, check.options)).payload;
    } catch (err) {
      if (err instanceof UnknownKeyError) throw unknownKid();
      return check.afterRejection(err, token);
    }
  }

  async #introspect(token: string): Promise<VerifiedToken> {
    const settings = this.#settings;
    const metadata = await this.#issuerMetadata();
    if (this.#introspector === null) {
      if (metadata.introspectionEndpoint === null) throw issuerUnavailable(`${metadata.source} has no introspection_endpoint`);
      this.#introspector = new Introspector(this.#http, metadata.issuer, metadata.introspectionEndpoint, settings.clientId!, settings.clientSecret!, settings.fetchTimeoutMs);
    }
    return this.#introspector.verify(
      token,
      {
        issuer: metadata.issuer,
        audience: settings.audience,
        clockToleranceSeconds: settings.clockToleranceSeconds,
        defaultLifetimeSeconds: settings.introspectionDefaultSeconds,
      },
      settings.now(),
    );
  }

  /** Runs an issuer fetch; its failure is the 503 (the token may be fine). */
  async #call<T>(fetch: () => Promise<T>): Promise<T> {
    try {
      return await fetch();
    } catch (err) {
      throw issuerUnavailable(reasonOf(err));
    }
  }

  /** The issuer's metadata: discovered once; after a failure, retried at most once per cooldown. */
  #issuerMetadata(): Promise<IssuerMetadata> {
    if (this.#metadata !== null) return this.#metadata;
    const now = this.#settings.now();
    if (now - this.#metadataFailedAt < this.#settings.cooldownMs) {
      return Promise.reject(issuerUnavailable(`issuer discovery failed less than ${this.#settings.cooldownMs / 1000}s ago`));
    }
    const settings = this.#settings;
    const discovery =
      settings.localKeys !== null
        ? Promise.resolve<IssuerMetadata>({ issuer: settings.issuer, jwksUri: IN_PROCESS, introspectionEndpoint: null, source: 'this process (embedded authorization server)' })
        : discoverIssuer(this.#http, settings.issuer, { issuerFromDocument: settings.issuerFromDiscovery, jwksUri: settings.jwksUri });
    this.#metadata = discovery.then(
      (metadata) => {
        this.#known = metadata;
        this.#log.info({ issuer: metadata.issuer, source: metadata.source, jwksUri: metadata.jwksUri }, 'discovered the token issuer');
        return metadata;
      },
      (err: unknown) => {
        this.#metadata = null;
        this.#metadataFailedAt = settings.now();
        this.#log.warn({ issuer: settings.issuer, err: reasonOf(err) }, 'issuer discovery failed');
        throw issuerUnavailable(reasonOf(err));
      },
    );
    return this.#metadata;
  }

  async warm(): Promise<void> {
    try {
      const metadata = await this.#issuerMetadata();
      await this.#jwks.keys(metadata.jwksUri);
    } catch (err) {
      const reason = err instanceof GatewayError ? (err.detail ?? err.description) : reasonOf(err);
      this.#log.warn({ issuer: this.#settings.issuer, err: reason }, 'could not load the issuer keys at start; will retry on the first request');
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#tokens.clear();
    this.#refused?.clear();
    this.#http.close().catch(() => undefined);
  }
}

/**
 * Creates a validator for one issuer and audience. Checks the options and throws an Error that
 * names the problem (issuer not a URL, http issuer off loopback, no audience, half of the
 * client credentials); fetches nothing until `warm()` or the first `verify()`.
 */
export async function createTokenValidator(options: TokenValidatorOptions, log: Logger): Promise<TokenValidator> {
  return new OidcTokenValidator(validatorSettings(options), log);
}
