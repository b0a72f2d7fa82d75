/**
 * The usual end-to-end setup of an incoming-auth test: an issuer whose keys the test holds
 * (KeyIssuer), SDK servers as backends, and a gateway with inline OIDC in front of them,
 * `resourceUrl` http://127.0.0.1:4483/mcp. `bearer(sub)` mints a valid Authorization value.
 */
import type { JWTPayload } from 'jose';
import type { Logger } from '../../../core/observe/log.ts';
import type { RunningVmcp } from '../../../core/vmcp/virtual-mcp-server.ts';
import { startSdkServer, type SdkServer, type SdkServerOptions } from '../../fixtures/sdk-server.ts';
import { startTestGateway } from '../../helpers/gateway.ts';
import { inlineOidcYaml } from './gateway.ts';
import { KeyIssuer, type SigningAlg } from './key-issuer.ts';

export const RESOURCE = 'http://127.0.0.1:4483/mcp';

export interface OidcGatewayOptions {
  /** The backends (SDK servers), by options; one named `alpha` when omitted. */
  backends?: SdkServerOptions[];
  alg?: SigningAlg;
  /** Extra lines under the VirtualMCPServer `spec:` (e.g. `  server: {engine: node}`). */
  spec?: string;
  /** Extra keys of `spec.config`, e.g. `session: {maxSessionsPerPrincipal: 2}`. */
  config?: string;
  log?: Logger;
}

export interface OidcGateway {
  readonly issuer: KeyIssuer;
  readonly backends: SdkServer[];
  readonly gateway: RunningVmcp;
  /** `Bearer <token>` of a valid token for the resource, for `sub` (default user-1). */
  bearer(sub?: string, extra?: JWTPayload): Promise<string>;
  stop(): Promise<void>;
}

export async function startOidcGateway(options: OidcGatewayOptions = {}): Promise<OidcGateway> {
  const issuer = await KeyIssuer.start();
  await issuer.addKey(options.alg ?? 'ES256');
  const backends = await Promise.all((options.backends ?? [{ name: 'alpha' }]).map((o) => startSdkServer(o)));
  const gateway = await startTestGateway({
    backends: backends.map((b) => ({ name: b.name, url: b.url })),
    incomingAuth: inlineOidcYaml({ issuer: issuer.url, audience: RESOURCE, resourceUrl: RESOURCE }),
    ...(options.spec === undefined ? {} : { spec: options.spec }),
    ...(options.config === undefined ? {} : { config: options.config }),
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  return {
    issuer,
    backends,
    gateway,
    async bearer(sub = 'user-1', extra = {}) {
      return `Bearer ${await issuer.mint(issuer.claims(RESOURCE, { sub, ...extra }))}`;
    },
    async stop() {
      await gateway.stop();
      await Promise.all(backends.map((b) => b.close()));
      await issuer.close();
    },
  };
}
