/**
 * The identity providers a user logs in with, in the configured order (`upstreamProviders[]`):
 * each one an OAuth 2.0 client of the gateway's, built with openid-client. `oidc` providers are
 * discovered from their issuer and give an ID token; `oauth2` providers are given their
 * endpoints and may name the user through a userInfo endpoint (`fieldMapping`).
 *
 * Requests to them go through the same guarded HTTP as incoming auth's issuer calls (no private
 * addresses unless the provider itself is on loopback, plain http only on loopback, time-bound).
 */
import * as client from 'openid-client';
import type { TokenResponseMapping, UpstreamProviderConfig } from '@gatehouse-mcp/gateway';
import type { Logger } from 'pino';
import { IssuerHttp } from '../incoming-auth/issuer-http.ts';

const TIMEOUT_MS = 10_000;
/** A provider that could not be discovered is not asked again sooner than this. */
const RETRY_DISCOVERY_MS = 5_000;

/** Who logged in, as the first provider says. */
export interface UpstreamIdentity {
  readonly sub: string;
  readonly name?: string;
  readonly email?: string;
}

/** What a provider gave for one login. */
export interface UpstreamTokens {
  readonly accessToken: string;
  readonly refreshToken: string | null;
  /** Epoch ms, or null when the provider did not say. */
  readonly expiresAt: number | null;
  /** Epoch ms when they were obtained: with expiresAt, their lifetime (absent in records of older versions). */
  readonly obtainedAt?: number;
  readonly scope: string | null;
}

/** `expiresAt` and `obtainedAt` of tokens a provider says live `expiresIn` seconds from now. */
function expiry(expiresIn: number | null): { expiresAt: number | null; obtainedAt: number } {
  const now = Date.now();
  return { expiresAt: expiresIn === null ? null : now + expiresIn * 1000, obtainedAt: now };
}

export class UpstreamProvider {
  readonly name: string;
  readonly index: number;
  readonly #settings: UpstreamProviderConfig;
  readonly #http: IssuerHttp;
  #config: client.Configuration | null = null;

  constructor(settings: UpstreamProviderConfig, index: number) {
    this.name = settings.name;
    this.index = index;
    this.#settings = settings;
    const origin = settings.type === 'oidc' ? settings.issuerUrl : new URL(settings.authorizationEndpoint).origin;
    this.#http = new IssuerHttp({ issuer: new URL(origin), allowPrivateIp: false, timeoutMs: TIMEOUT_MS });
  }

  /**
   * Discovers an `oidc` provider (an `oauth2` one's metadata is built from its settings). A
   * provider that cannot be reached at start does not stop the gateway (tokens already issued
   * stay good, and the provider may come back): the failure is logged and discovery is tried
   * again by the next login that needs it, at most every RETRY_DISCOVERY_MS.
   */
  async start(log: Logger): Promise<void> {
    try {
      await this.#configuration();
    } catch (err) {
      log.warn({ provider: this.name, err: err instanceof Error ? err.message : String(err) }, `upstream provider ${this.name} could not be discovered; logins try again when they need it`);
    }
  }

  #discovery: { readonly at: number; readonly result: Promise<client.Configuration> } | null = null;

  /** The provider's client configuration: discovered once, or again after a failure. */
  #configuration(): Promise<client.Configuration> {
    if (this.#config !== null) return Promise.resolve(this.#config);
    const last = this.#discovery;
    if (last !== null && Date.now() - last.at < RETRY_DISCOVERY_MS) return last.result;
    const result = this.#discover().then((config) => (this.#config = config));
    result.catch(() => undefined);
    this.#discovery = { at: Date.now(), result };
    return result;
  }

  async #discover(): Promise<client.Configuration> {
    const s = this.#settings;
    const secret = s.clientSecret?.value;
    const auth = secret === undefined ? client.None() : client.ClientSecretPost(secret);
    const options = { [client.customFetch]: this.#http.fetch, timeout: TIMEOUT_MS / 1000, execute: [] as ((config: client.Configuration) => void)[] };
    const insecure = (url: string): boolean => new URL(url).protocol === 'http:';
    try {
      if (s.type === 'oidc') {
        if (insecure(s.issuerUrl)) options.execute.push(client.allowInsecureRequests);
        return await client.discovery(new URL(s.issuerUrl), s.clientId, undefined, auth, options);
      }
      const config = new client.Configuration(
        { issuer: new URL(s.authorizationEndpoint).origin, authorization_endpoint: s.authorizationEndpoint, token_endpoint: s.tokenEndpoint },
        s.clientId,
        undefined,
        auth,
      );
      config[client.customFetch] = this.#http.fetch;
      config.timeout = TIMEOUT_MS / 1000;
      if (insecure(s.authorizationEndpoint) || insecure(s.tokenEndpoint)) client.allowInsecureRequests(config);
      return config;
    } catch (err) {
      throw new Error(`upstream provider ${this.name} (${s.type === 'oidc' ? s.issuerUrl : s.authorizationEndpoint}) could not be discovered: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  }

  /** Where the browser goes to log in with this provider. */
  async authorizationUrl(redirectUri: string, state: string, nonce: string, codeChallenge: string): Promise<string> {
    const params: Record<string, string> = { redirect_uri: redirectUri, state, code_challenge: codeChallenge, code_challenge_method: 'S256' };
    const scopes = [...this.#settings.scopes];
    if (this.#settings.type === 'oidc') {
      params.nonce = nonce;
      if (!scopes.includes('openid')) scopes.unshift('openid');
    }
    if (scopes.length > 0) params.scope = scopes.join(' ');
    return client.buildAuthorizationUrl(await this.#configuration(), params).href;
  }

  /**
   * The provider's answer at the callback: the code exchanged (checking state, PKCE, the `iss`
   * the provider may send, and for `oidc` the ID token and its nonce), and who logged in.
   */
  async finish(callbackUrl: URL, state: string, nonce: string, codeVerifier: string): Promise<{ tokens: UpstreamTokens; identity: UpstreamIdentity | null }> {
    const s = this.#settings;
    if (s.type === 'oauth2' && s.tokenResponseMapping !== null) {
      // A token response of its own shape, which openid-client would refuse: the code is exchanged
      // here and the answer read through the mapping. The state was checked already (the leg was
      // found by it, once); an oauth2 provider has no issuer identifier to compare `iss` with.
      const params = callbackUrl.searchParams;
      const code = params.get('code');
      if (params.get('state') !== state) throw new Error('the state does not match');
      if (code === null || code === '') throw new Error('the provider sent no code');
      const redirectUri = callbackUrl.origin + callbackUrl.pathname;
      const tokens = await this.#mappedGrant(s, s.tokenResponseMapping, { grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: codeVerifier });
      return { tokens, identity: await this.#userInfo(tokens.accessToken) };
    }
    const oidc = s.type === 'oidc';
    const configuration = await this.#configuration();
    const grant = await client.authorizationCodeGrant(configuration, callbackUrl, {
      pkceCodeVerifier: codeVerifier,
      expectedState: state,
      ...(oidc ? { expectedNonce: nonce, idTokenExpected: true } : {}),
    });
    const tokens: UpstreamTokens = {
      accessToken: grant.access_token,
      refreshToken: grant.refresh_token ?? null,
      ...expiry(typeof grant.expires_in === 'number' ? grant.expires_in : null),
      scope: grant.scope ?? null,
    };
    if (oidc) {
      const claims = grant.claims();
      if (claims === undefined) throw new Error('the provider sent no ID token');
      let profile: Record<string, unknown> = claims;
      // A code flow's ID token often carries the subject alone: name and email come from userinfo.
      if ((claims['name'] === undefined || claims['email'] === undefined) && configuration.serverMetadata().userinfo_endpoint !== undefined) {
        try {
          profile = { ...(await client.fetchUserInfo(configuration, tokens.accessToken, claims.sub)), ...claims };
        } catch {
          // The profile is a courtesy: the ID token already said who signed in.
        }
      }
      return { tokens, identity: { sub: claims.sub, ...stringClaim('name', profile['name']), ...stringClaim('email', profile['email']) } };
    }
    return { tokens, identity: await this.#userInfo(tokens.accessToken) };
  }

  /** New tokens for a refresh token (refreshToken is null when the provider sent none back). */
  async refresh(refreshToken: string): Promise<UpstreamTokens> {
    const s = this.#settings;
    if (s.type === 'oauth2' && s.tokenResponseMapping !== null) return this.#mappedGrant(s, s.tokenResponseMapping, { grant_type: 'refresh_token', refresh_token: refreshToken });
    const grant = await client.refreshTokenGrant(await this.#configuration(), refreshToken);
    return {
      accessToken: grant.access_token,
      refreshToken: grant.refresh_token ?? null,
      ...expiry(typeof grant.expires_in === 'number' ? grant.expires_in : null),
      scope: grant.scope ?? null,
    };
  }

  /** A token request to a provider whose answer has its own shape (`tokenResponseMapping`). */
  async #mappedGrant(s: Extract<UpstreamProviderConfig, { type: 'oauth2' }>, mapping: TokenResponseMapping, form: Record<string, string>): Promise<UpstreamTokens> {
    const body = new URLSearchParams({ ...form, client_id: s.clientId });
    if (s.clientSecret !== null) body.set('client_secret', s.clientSecret.value);
    const res = await this.#http.fetch(s.tokenEndpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }, body: body.toString() });
    const text = await res.text();
    if (text.length > MAX_TOKEN_RESPONSE) throw new Error(`the token endpoint's answer is larger than ${MAX_TOKEN_RESPONSE} bytes`);
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      throw new Error(`the token endpoint answered HTTP ${res.status} without JSON`);
    }
    if (res.status !== 200) throw new Error(`the token endpoint answered HTTP ${res.status}`);
    const accessToken = at(answer, mapping.accessTokenPath ?? 'access_token');
    if (typeof accessToken !== 'string' || accessToken.length === 0) throw new Error(`the token response has no access token at ${mapping.accessTokenPath ?? 'access_token'}`);
    const refreshToken = at(answer, mapping.refreshTokenPath ?? 'refresh_token');
    const expiresIn = Number(at(answer, mapping.expiresInPath ?? 'expires_in'));
    const scope = at(answer, mapping.scopePath ?? 'scope');
    return {
      accessToken,
      refreshToken: typeof refreshToken === 'string' && refreshToken.length > 0 ? refreshToken : null,
      ...expiry(Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn : null),
      scope: typeof scope === 'string' ? scope : Array.isArray(scope) ? scope.filter((x) => typeof x === 'string').join(' ') : null,
    };
  }

  /** An `oauth2` provider's userInfo answer, mapped through `fieldMapping`; null without userInfo. */
  async #userInfo(accessToken: string): Promise<UpstreamIdentity | null> {
    if (this.#settings.type !== 'oauth2' || this.#settings.userInfo === null) return null;
    const info = this.#settings.userInfo;
    const headers: Record<string, string> = { accept: 'application/json', ...info.additionalHeaders, authorization: `Bearer ${accessToken}` };
    const res = await this.#http.fetch(info.endpointUrl, { method: info.httpMethod, headers });
    if (res.status !== 200) throw new Error(`the userInfo endpoint answered HTTP ${res.status}`);
    const body = (await res.json()) as Record<string, unknown>;
    const mapping = info.fieldMapping;
    const pick = (fields: readonly string[] | undefined, fallback: string): string | undefined => {
      for (const field of fields !== undefined && fields.length > 0 ? fields : [fallback]) {
        const value = body[field];
        if (typeof value === 'string' && value.length > 0) return value;
        if (typeof value === 'number') return String(value);
      }
      return undefined;
    };
    const sub = pick(mapping?.subjectFields, 'sub');
    if (sub === undefined) throw new Error('the userInfo answer names no subject');
    const name = pick(mapping?.nameFields, 'name');
    const email = pick(mapping?.emailFields, 'email');
    return { sub, ...(name === undefined ? {} : { name }), ...(email === undefined ? {} : { email }) };
  }

  close(): Promise<void> {
    return this.#http.close();
  }
}

function stringClaim(name: 'name' | 'email', value: unknown): Partial<UpstreamIdentity> {
  return typeof value === 'string' && value.length > 0 ? { [name]: value } : {};
}

/** Largest token response read when it has its own shape. */
const MAX_TOKEN_RESPONSE = 64 * 1024;

/** The value at a dotted path (`data.token`) of a JSON value; undefined when any step is missing. */
function at(value: unknown, path: string): unknown {
  let current = value;
  for (const step of path.split('.')) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, step)) return undefined;
    current = (current as Record<string, unknown>)[step];
  }
  return current;
}
