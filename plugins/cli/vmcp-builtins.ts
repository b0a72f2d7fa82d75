/** The built-in plugins a vMCP config asks for, in chain order (incoming auth first). */
import type { VmcpConfig } from '../../core/config/vmcp-types.ts';
import type { PluginSpec } from '../../core/plugin-loader.ts';
import { anonymousAuth } from '../incoming-auth/anonymous.ts';
import { oidcAuth, type OidcAuthConfig } from '../incoming-auth/oidc.ts';
import { authServer, type AuthServerPluginConfig } from '../auth-server/auth-server.ts';
import { loadServerKeys, publicJwks } from '../auth-server/keys.ts';
import { DEFAULT_SCOPES } from '../auth-server/routes.ts';
import { UpstreamTokenHandle } from '../auth-server/upstream-token-access.ts';
import { staticCredentials } from '../outgoing-auth/static-credentials.ts';
import { tokenExchange, type TokenExchangePluginConfig } from '../outgoing-auth/token-exchange.ts';
import { upstreamInject, type UpstreamInjectConfig } from '../outgoing-auth/upstream-inject.ts';

export function vmcpBuiltins(config: VmcpConfig): PluginSpec[] {
  const where = `VirtualMCPServer/${config.name}`;
  const specs: PluginSpec[] = [];

  const incoming = config.incomingAuth;
  const authServerConfig = config.authServer;
  // With the embedded authorization server, incoming auth checks its tokens with its keys, in
  // this process (validate made incomingAuth oidc inline, with the server's issuer).
  const keys = authServerConfig === null ? null : loadServerKeys(authServerConfig.signingKeys, authServerConfig.hmacSecrets);
  const upstreamTokens = new UpstreamTokenHandle();
  if (incoming.type === 'anonymous') {
    specs.push({ definition: anonymousAuth, config: undefined, source: `${where} spec.incomingAuth` });
  } else {
    // With the embedded server, the endpoint's scopes are the ones it issues (its default when
    // none are configured): the metadata and the challenge name them, so that clients ask for them.
    const oidc: OidcAuthConfig = keys === null ? incoming : { ...incoming, scopes: incoming.scopes ?? DEFAULT_SCOPES, validator: { localKeys: publicJwks(keys) } };
    specs.push({ definition: oidcAuth, config: oidc, source: `${where} spec.incomingAuth` });
  }
  if (authServerConfig !== null && keys !== null && incoming.type === 'oidc') {
    specs.push({
      definition: authServer,
      config: { authServer: authServerConfig, keys, resource: incoming.resourceUrl, scopes: incoming.scopes ?? [], upstreamTokens } satisfies AuthServerPluginConfig,
      source: `${where} spec.authServerConfig`,
    });
  }
  // Outgoing auth, one plugin per family of strategies, each compiling a hook only for its backends.
  const strategies = new Set(config.backends.map((backend) => backend.externalAuth?.type));
  if (strategies.has('upstreamInject')) {
    // validate refused upstreamInject without an authorization server.
    specs.push({ definition: upstreamInject, config: { upstreamTokens } satisfies UpstreamInjectConfig, source: `${where} spec.outgoingAuth` });
  }
  if (strategies.has('tokenExchange')) {
    specs.push({
      definition: tokenExchange,
      config: { cache: config.tokenExchangeCache, upstreamTokens: authServerConfig === null ? null : upstreamTokens } satisfies TokenExchangePluginConfig,
      source: `${where} spec.outgoingAuth`,
    });
  }
  if (strategies.has('headerInjection') || strategies.has('bearerToken')) {
    specs.push({ definition: staticCredentials, config: undefined, source: `${where} spec.outgoingAuth` });
  }
  return specs;
}
