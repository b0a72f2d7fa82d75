/**
 * The built-in plugins a vMCP config asks for, in chain order (incoming auth first, then the
 * claims filter when claims are configured or a registry feeds the group). Across
 * reloads (`VmcpBuiltins`), what the embedded authorization server shares with the other plugins
 * is made once: its keys (generated ones too, else incoming auth would refuse the tokens the
 * kept server goes on signing) and the handle its upstream tokens are read through.
 */
import { isDeepStrictEqual } from 'node:util';
import { validateVmcpFile, type PluginSpec, type VmcpConfig, type VmcpValidateOptions } from '@gatehouse-mcp/gateway';
import { anonymousAuth } from '../incoming-auth/anonymous.ts';
import { oidcAuth, type OidcAuthConfig } from '../incoming-auth/oidc.ts';
import { authServer, type AuthServerPluginConfig } from '../auth-server/auth-server.ts';
import { loadServerKeys, publicJwks } from '../auth-server/keys.ts';
import { DEFAULT_SCOPES } from '../auth-server/routes.ts';
import { UpstreamTokenHandle } from '../auth-server/upstream-token-access.ts';
import { cedarPolicyChecks } from '../cedar-authz/checks.ts';
import { cedarAuthz, type CedarAuthzPluginConfig } from '../cedar-authz/plugin.ts';
import { staticCredentials } from '../outgoing-auth/static-credentials.ts';
import { tokenExchange, type TokenExchangePluginConfig } from '../outgoing-auth/token-exchange.ts';
import { upstreamInject, type UpstreamInjectConfig } from '../outgoing-auth/upstream-inject.ts';
import { claimsConfigured, claimsFilter, type ClaimsFilterConfig } from '../registry-authz/gateway-filter.ts';

/** What validation of a vMCP file is given by the built-in plugins: Cedar's checks of `authzConfig`'s policies. */
export const BUILTIN_CHECKS: VmcpValidateOptions = { authzChecks: cedarPolicyChecks };

/** `validateVmcpFile` with the built-in plugins' checks: what `vmcp validate`, `serve`, reloads and `bench` read a file with. */
export const validateVmcp = (file: string) => validateVmcpFile(file, BUILTIN_CHECKS);

/** What the plugins of one configuration share with the embedded authorization server. */
interface Shared {
  readonly authServer: VmcpConfig['authServer'];
  readonly keys: ReturnType<typeof loadServerKeys> | null;
  readonly upstreamTokens: UpstreamTokenHandle;
}

/**
 * The built-ins of each configuration a process serves, its reloads included. What the serving
 * configuration shares with its authorization server carries over to a reload whose server is
 * the same; a reload is only a candidate until it is applied (`served`): one refused (its server
 * changed) must not replace the keys and handle the running server goes on with.
 */
export class VmcpBuiltins {
  #shared: Shared | null = null;
  readonly #candidates = new WeakMap<VmcpConfig, Shared>();

  /** The plugins for `config`; the authorization server's keys and token handle carry over while its config is the serving one's. */
  for(config: VmcpConfig): PluginSpec[] {
    const serving = this.#shared;
    const shared: Shared =
      serving !== null && isDeepStrictEqual(serving.authServer, config.authServer)
        ? serving
        : {
            authServer: config.authServer,
            // With the embedded authorization server, incoming auth checks its tokens with its keys, in
            // this process (validate made incomingAuth oidc inline, with the server's issuer).
            keys: config.authServer === null ? null : loadServerKeys(config.authServer.signingKeys, config.authServer.hmacSecrets),
            upstreamTokens: new UpstreamTokenHandle(),
          };
    if (serving === null) this.#shared = shared; // the configuration the process starts with
    else this.#candidates.set(config, shared);
    return builtinsWith(config, shared);
  }

  /** `config` (given to `for`) now serves: what it shares is the serving one's. */
  served(config: VmcpConfig): void {
    const shared = this.#candidates.get(config);
    if (shared !== undefined) this.#shared = shared;
  }
}

/** The built-ins of one configuration, served once (no reload). */
export function vmcpBuiltins(config: VmcpConfig): PluginSpec[] {
  return new VmcpBuiltins().for(config);
}

function builtinsWith(config: VmcpConfig, shared: Shared): PluginSpec[] {
  const where = `VirtualMCPServer/${config.name}`;
  const specs: PluginSpec[] = [];

  const incoming = config.incomingAuth;
  const authServerConfig = config.authServer;
  const { keys, upstreamTokens } = shared;
  if (incoming.type === 'anonymous') {
    specs.push({ definition: anonymousAuth, config: undefined, source: `${where} spec.incomingAuth` });
  } else {
    // With the embedded server, the endpoint's scopes are the ones it issues (its default when
    // none are configured): the metadata and the challenge name them, so that clients ask for them.
    const oidc: OidcAuthConfig = keys === null ? incoming : { ...incoming, scopes: incoming.scopes ?? DEFAULT_SCOPES, validator: { localKeys: publicJwks(keys) } };
    specs.push({ definition: oidcAuth, config: oidc, source: `${where} spec.incomingAuth` });
  }
  // Per-user tool policy, right after the principal is known: the claims filter's view is asked
  // before any later plugin's (a Cedar plugin's), so what it hides no later plugin decides on.
  // A group fed by a registry is filtered whatever its file says: the registry's servers bring their
  // claims (as annotations) with each read, and the feed's reloads keep these built-ins.
  if (claimsConfigured(config.backends) || config.registry !== null) {
    specs.push({ definition: claimsFilter, config: { anonymous: incoming.type === 'anonymous', where } satisfies ClaimsFilterConfig, source: `${where} claims (annotations, spec.config.aggregation.tools[].authzClaims)` });
  }
  // Who may use which tool, prompt and resource: Cedar policies (spec.incomingAuth.authzConfig),
  // after the claims filter when both are configured (claims first, then Cedar).
  if (config.authz !== null) {
    specs.push({
      definition: cedarAuthz,
      config: { authz: config.authz, serverName: config.name, anonymous: incoming.type === 'anonymous' } satisfies CedarAuthzPluginConfig,
      source: `${where} spec.incomingAuth.authzConfig`,
    });
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
