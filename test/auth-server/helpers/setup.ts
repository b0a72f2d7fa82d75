/**
 * A gateway with the embedded authorization server in front of a real MCP backend, chained to
 * real upstream identity providers: `corp` (oidc, names the user) and, with `chained`, `github`
 * (plain oauth2, its endpoints given), in that order.
 */
import { DEFAULT_AUTH_SERVER_BOUNDS } from '../../../core/config/auth-server-limits.ts';
import type { AuthServerConfig, UpstreamProviderConfig } from '../../../core/config/vmcp-types.ts';
import type { RunningVmcp } from '../../../core/vmcp/virtual-mcp-server.ts';
import { authServer, type AuthServerPluginConfig } from '../../../plugins/auth-server/auth-server.ts';
import { loadServerKeys } from '../../../plugins/auth-server/keys.ts';
import { UpstreamTokenHandle } from '../../../plugins/auth-server/upstream-token-access.ts';
import { freePort } from '../../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../../fixtures/sdk-server.ts';
import { startTestGateway } from '../../helpers/gateway.ts';
import { captureLog, type CapturedLog } from '../../store/helpers/log.ts';
import { startUpstreamIdp, type UpstreamIdp } from './upstream-idp.ts';

export const USER = { sub: 'alice-0001', name: 'Alice Example', email: 'alice@example.com' };

export interface AuthGateway {
  readonly issuer: string;
  readonly resource: string;
  readonly gateway: RunningVmcp;
  readonly corp: UpstreamIdp;
  readonly github: UpstreamIdp | null;
  readonly backend: SdkServer;
  readonly log: CapturedLog;
  /** The accessor of the logins' upstream tokens. */
  readonly upstreamTokens: UpstreamTokenHandle;
  close(): Promise<void>;
}

export interface AuthGatewayOptions {
  readonly chained?: boolean;
  readonly authorizationEndpointBaseUrl?: string;
  readonly corpAccessTokenTtlSeconds?: number;
  /** The endpoints' budgets and the stores' bounds in place of the defaults (a benchmark lifts them, a test lowers them). */
  readonly bounds?: Partial<Pick<AuthServerConfig, 'rateLimiting' | 'maxClients' | 'maxPendingLogins' | 'maxPendingLoginsPerAddress'>>;
  /** authServerConfig.displayName (default none: the consent page names the resource URL). */
  readonly displayName?: string;
  /** The authorization server's storage (default memory). */
  readonly storage?: AuthServerConfig['storage'];
  /** Serves Client ID Metadata Documents in place of the network. */
  readonly fetchClientMetadata?: AuthServerPluginConfig['fetchClientMetadata'];
  /** Extra lines under the VirtualMCPServer `spec:`, e.g. a `server:` block. */
  readonly spec?: string;
  /** Extra keys of `spec.config` (YAML flow style), e.g. `audit: {enabled: true}`. */
  readonly config?: string;
}

export async function startAuthGateway(options: AuthGatewayOptions = {}): Promise<AuthGateway> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const callback = `${issuer}/oauth/callback`;
  // What starts before the gateway is closed again if the gateway does not start, so that a
  // failed start fails its test instead of holding the file open until its timeout.
  const started: { close(): Promise<void> }[] = [];
  const corp = track(started, await startUpstreamIdp({ user: USER, redirectUri: callback, clientSecret: 'corp-secret', ...(options.corpAccessTokenTtlSeconds === undefined ? {} : { accessTokenTtlSeconds: options.corpAccessTokenTtlSeconds }) }));
  const github = options.chained === true ? track(started, await startUpstreamIdp({ user: { sub: 'gh-42' }, redirectUri: callback })) : null;
  const backend = track(started, await startSdkServer({ name: 'echo' }));
  const providers: UpstreamProviderConfig[] = [
    { name: 'corp', type: 'oidc', issuerUrl: corp.issuer, clientId: 'gatehouse', clientSecret: { name: 'corp', key: 'secret', value: 'corp-secret' }, scopes: ['openid', 'profile', 'email'] },
  ];
  if (github !== null) {
    providers.push({
      name: 'github',
      type: 'oauth2',
      authorizationEndpoint: `${github.issuer}/auth`,
      tokenEndpoint: `${github.issuer}/token`,
      clientId: 'gatehouse',
      clientSecret: null,
      scopes: ['repo', 'offline_access'],
      userInfo: null,
      tokenResponseMapping: null,
    });
  }
  const settings: AuthServerConfig = {
    issuer,
    displayName: options.displayName ?? null,
    authorizationEndpointBaseUrl: options.authorizationEndpointBaseUrl ?? null,
    signingKeys: [],
    hmacSecrets: [],
    tokenLifespans: { accessTokenMs: 3_600_000, refreshTokenMs: 168 * 3_600_000, authCodeMs: 600_000 },
    upstreamProviders: providers,
    storage: options.storage ?? { type: 'memory' },
    ...DEFAULT_AUTH_SERVER_BOUNDS,
    ...options.bounds,
  };
  const log = captureLog('info');
  const resource = `${issuer}/mcp`;
  const upstreamTokens = new UpstreamTokenHandle();
  let gateway: RunningVmcp;
  try {
    gateway = await startTestGateway({
      port,
      log: log.log,
      backends: [{ name: 'echo', url: backend.url }],
      ...(options.spec === undefined ? {} : { spec: options.spec }),
      ...(options.config === undefined ? {} : { config: options.config }),
      plugins: [{ definition: authServer, config: { authServer: settings, keys: loadServerKeys([], []), resource, scopes: ['mcp'], upstreamTokens, ...(options.fetchClientMetadata === undefined ? {} : { fetchClientMetadata: options.fetchClientMetadata }) } satisfies AuthServerPluginConfig, source: 'test' }],
    });
  } catch (error) {
    for (const server of started.reverse()) await server.close().catch(() => undefined);
    throw error;
  }
  return {
    issuer,
    resource,
    gateway,
    corp,
    github,
    backend,
    log,
    upstreamTokens,
    async close() {
      await gateway.stop();
      await backend.close();
      await corp.close();
      await github?.close();
    },
  };
}

function track<T extends { close(): Promise<void> }>(started: { close(): Promise<void> }[], server: T): T {
  started.push(server);
  return server;
}
