/**
 * Authentication of registry callers in oauth mode: a bearer token in the Authorization header,
 * verified by the provider that issued it (issuer-validators.ts). A request without a valid
 * token is a 401 whose WWW-Authenticate challenge points at the registry's RFC 9728 protected
 * resource metadata, which this plugin also serves.
 */
import { type Context, definePlugin, Principal } from '@gatehouse-mcp/gateway';
import type { RegistryAuthConfig } from '../config/registry-config.ts';
import type { VerifiedToken } from '../../incoming-auth/contract.ts';
import { bearerTokenOf } from '../../incoming-auth/bearer.ts';
import { protectedResourceMetadata, protectedResourceRoutes, resourceMetadataUrl } from '../../incoming-auth/resource-metadata.ts';
import { IssuerValidators, type ValidatorFactory } from './issuer-validators.ts';

export interface BearerAuthConfig {
  readonly auth: Extract<RegistryAuthConfig, { mode: 'oauth' }>;
  readonly createValidator: ValidatorFactory;
}

function setPrincipal(ctx: Context, token: string, verified: VerifiedToken): undefined {
  ctx.principal = new Principal(verified.subject, verified.claims, token, verified.issuer);
  return undefined;
}

export const registryBearerAuth = definePlugin<BearerAuthConfig>({
  name: 'registry-bearer-auth',
  async create(config, host) {
    const { auth } = config;
    const validators = await IssuerValidators.create(auth.providers, config.createValidator, host.log);
    const metadata = protectedResourceMetadata({ resource: auth.resourceUrl, authorizationServers: auth.providers.map((p) => p.issuerUrl), scopes: [] });
    host.setAuthChallenge({ realm: auth.realm, resourceMetadata: resourceMetadataUrl(auth.resourceUrl), scopes: [] });
    return {
      name: 'registry-bearer-auth',
      routes: protectedResourceRoutes(auth.resourceUrl, metadata),
      authenticate(ctx) {
        const token = bearerTokenOf(ctx.req, ctx.query);
        const verified = validators.verify(token);
        if (verified instanceof Promise) return verified.then((v) => setPrincipal(ctx, token, v));
        return setPrincipal(ctx, token, verified);
      },
      async start() {
        await validators.warm();
      },
      stop() {
        validators.close();
      },
    };
  },
});
