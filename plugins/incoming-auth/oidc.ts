/**
 * `incomingAuth.type: oidc`: every request to the MCP endpoint (and to plugin routes that do
 * not opt out) must carry a bearer token from the configured issuer, for the configured
 * audience. `inline` names the issuer; `cluster` validates the cluster's own service-account
 * tokens (cluster.ts).
 *
 * The plugin contributes:
 * - `authenticate`: bearer token → validator → `ctx.principal`. Synchronous on a cache hit (the
 *   connection's last admitted header compared as a string, else the validator's hash and
 *   lookup); a promise only when the token must be verified or introspected.
 * - the RFC 9728 documents (resource-metadata.ts), public;
 * - the challenge: every 401 carries `WWW-Authenticate: Bearer realm, resource_metadata, error,
 *   error_description` (written by core/http/error-response.ts from what is set here).
 */
import type { Socket } from 'node:net';
import {
  type ClusterOidcConfig,
  type Context,
  definePlugin,
  type GatewayError,
  type HookResult,
  type IncomingAuthConfig,
  type InlineOidcConfig,
  PluginConfigError,
  Principal,
} from '@gatehouse-mcp/gateway';
import { clusterValidatorOptions } from './cluster.ts';
import type { TokenValidator, TokenValidatorOptions, VerifiedToken } from './contract.ts';
import { asGatewayError } from './errors.ts';
import { bearerTokenFrom } from './bearer.ts';
import { protectedResourceMetadata, protectedResourceRoutes, resourceMetadataUrl } from './resource-metadata.ts';
import { createTokenValidator } from './validator.ts';

/**
 * `spec.incomingAuth` of type oidc as the config mapping resolved it (`resourceUrl` is the
 * resource identifier and the challenge realm, `scopes` are advertised in `scopes_supported`
 * and the challenge), plus validator options the YAML does not expose (tests, embedding code).
 */
export type OidcAuthConfig = Omit<Extract<IncomingAuthConfig, { type: 'oidc' }>, 'type'> & {
  readonly validator?: Partial<TokenValidatorOptions>;
};

/** The validator options a vMCP oidc config stands for. */
function validatorOptionsOf(oidc: InlineOidcConfig | ClusterOidcConfig): TokenValidatorOptions {
  if (oidc.type === 'cluster') return clusterValidatorOptions(oidc);
  return {
    issuer: oidc.issuer,
    audience: oidc.audience,
    clientId: oidc.clientId,
    ...(oidc.clientSecret === null ? {} : { clientSecret: oidc.clientSecret.value }),
    allowPrivateIp: oidc.jwksAllowPrivateIP,
  };
}

function principalOf(verified: VerifiedToken, token: string): Principal {
  return new Principal(verified.subject, verified.claims, token, verified.issuer);
}

/**
 * The last bearer admitted on a connection. A keep-alive MCP client sends the same
 * Authorization header on every request: the next one is then admitted by comparing the whole
 * header with this one (exact string equality, so no other token can match) and checking the
 * time, without touching the shared cache. Under load that was the difference between ~1 µs and
 * ~10 µs per request when the shared cache hashed the token (its lookup, now a slice and an LRU
 * get, still runs cold between requests). Valid no longer than the shared cache would keep the
 * token.
 *
 * The Principal made for it is kept too and given to each of the connection's requests: it is
 * immutable (readonly fields, frozen claims, the token private), so one object per admitted
 * token costs no allocation per request, and what later plugins keep per principal object (the
 * rate limits' bucket keys, tokenExchange's cache key) stays found.
 */
interface ConnectionBearer {
  readonly header: string;
  readonly principal: Principal;
  readonly validUntil: number;
}

/** The authenticate hook of one validator. No closure per request on the cache-hit paths. */
class BearerAuthenticator {
  readonly #validator: TokenValidator;
  readonly #now: () => number;
  /**
   * Per plugin instance: each connection's last admitted bearer, by its socket. Not a property
   * of the socket: adding one changes the socket's hidden class, and Node's stream functions,
   * which every socket of the process goes through, then see one more kind of socket (enough,
   * with the backend connections', for their property loads to go megamorphic).
   */
  readonly #bearers = new WeakMap<Socket, ConnectionBearer>();

  constructor(validator: TokenValidator, now: () => number) {
    this.#validator = validator;
    this.#now = now;
  }

  readonly authenticate = (ctx: Context): HookResult | Promise<HookResult> => {
    const head = ctx.head;
    const last = this.#bearers.get(ctx.req.socket);
    if (last !== undefined && head.authorization === last.header && head.authorizationCount === 1 && ctx.query === '' && this.#now() < last.validUntil) {
      ctx.principal = last.principal;
      return undefined;
    }
    let token: string;
    let verified: VerifiedToken | Promise<VerifiedToken>;
    try {
      token = bearerTokenFrom(head.authorization, head.authorizationCount, ctx.query);
      verified = this.#validator.verify(token);
    } catch (err) {
      return asGatewayError(err);
    }
    if (verified instanceof Promise) return verified.then((v) => this.#admit(ctx, v, token), refuse);
    return this.#admit(ctx, verified, token);
  };

  #admit(ctx: Context, verified: VerifiedToken, token: string): undefined {
    const principal = principalOf(verified, token);
    ctx.principal = principal;
    const socket = ctx.req.socket as Socket | null;
    if (socket !== null) {
      this.#bearers.set(socket, { header: ctx.head.authorization!, principal, validUntil: verified.validUntil ?? verified.expiresAt * 1000 });
    }
    return undefined;
  }
}

function refuse(err: unknown): GatewayError {
  return asGatewayError(err);
}

export const oidcAuth = definePlugin<OidcAuthConfig>({
  name: 'oidc',
  async create(config, host) {
    let validator: TokenValidator;
    try {
      const options: TokenValidatorOptions = { ...validatorOptionsOf(config.oidc), ...config.validator };
      validator = await createTokenValidator(options, host.log);
    } catch (err) {
      // A missing service-account mount or a bad option: a clear start-up error, not a stack trace.
      throw new PluginConfigError([`spec.incomingAuth: ${err instanceof Error ? err.message : String(err)}`]);
    }
    const scopes = config.scopes ?? [];
    const doc = protectedResourceMetadata({ resource: config.resourceUrl, authorizationServers: [config.oidc.issuer], scopes });
    host.setAuthChallenge({ realm: config.resourceUrl, resourceMetadata: resourceMetadataUrl(config.resourceUrl), scopes });
    const authenticator = new BearerAuthenticator(validator, config.validator?.now ?? Date.now);
    return {
      name: 'oidc',
      routes: protectedResourceRoutes(config.resourceUrl, doc),
      authenticate: authenticator.authenticate,
      async start() {
        await validator.warm();
        host.log.info({ issuer: config.oidc.issuer, audience: config.oidc.audience, mode: config.oidc.type }, 'incoming auth: oidc bearer tokens');
      },
      stop() {
        validator.close();
      },
    };
  },
});
