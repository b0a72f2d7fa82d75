/**
 * Two rows with the embedded authorization server (in-memory storage), every request carrying
 * the access token of one login through a real upstream identity provider (the tests'
 * oidc-provider, in the harness process, not counted):
 *
 *   "gatehouse (embedded AS)"                  the gateway's own JWT checked in process; the
 *                                              backend gets no credential
 *   "gatehouse (embedded AS + upstreamInject)" the same, and the backend gets the upstream
 *                                              provider's token of that login (a store read per
 *                                              request; the token lives 10 min: no refresh)
 *
 * Their ratio is what upstreamInject costs per request (target ≤ 1.05×).
 */
import { ClientFlows } from '../../test/auth-server/helpers/flows.ts';
import { startUpstreamIdp } from '../../test/auth-server/helpers/upstream-idp.ts';
import { startGatehouse, vmcpConfig } from './gatehouse.ts';
import { freePort } from './process.ts';
import type { Row } from './target.ts';

function embeddedRow(inject: boolean): Row {
  return {
    name: inject ? 'gatehouse (embedded AS + upstreamInject)' : 'gatehouse (embedded AS)',
    role: 'subject',
    async start(ctx) {
      const port = await freePort();
      const issuer = `http://127.0.0.1:${port}`;
      const idp = await startUpstreamIdp({ user: { sub: 'bench-user' }, redirectUri: `${issuer}/oauth/callback`, clientSecret: 'corp-secret' });
      try {
        const outgoing = inject
          ? { ref: 'corp-inject', documents: 'apiVersion: gatehouse.dev/v1alpha1\nkind: MCPExternalAuthConfig\nmetadata: {name: corp-inject}\nspec: {type: upstreamInject, upstreamInject: {providerName: corp}}' }
          : null;
        const config = (configCtx: Parameters<typeof vmcpConfig>[0]): string =>
          vmcpConfig(configCtx, `    type: oidc\n    oidcConfig: {type: inline, inline: {issuer: "${issuer}", clientId: bench, audience: "${issuer}/mcp"}}\n`, outgoing) +
          `  authServerConfig:\n    issuer: "${issuer}"\n` +
          `    upstreamProviders:\n      - {name: corp, type: oidc, oidcConfig: {issuerUrl: "${idp.issuer}", clientId: gatehouse, clientSecretRef: {name: corp, key: secret}}}\n` +
          '    storage: {type: memory}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: corp}\nstringData: {secret: corp-secret}\n';
        const target = await startGatehouse(ctx, { label: inject ? 'embedded-inject' : 'embedded', config, port });
        try {
          const flows = new ClientFlows(issuer);
          const tokens = await flows.login(await flows.register());
          return {
            ...target,
            headers: { authorization: `Bearer ${tokens.access}` },
            stop: async () => {
              await target.stop();
              await idp.close();
            },
          };
        } catch (err) {
          await target.stop();
          throw err;
        }
      } catch (err) {
        await idp.close();
        throw err;
      }
    },
  };
}

export function embeddedAuthServerRows(): Row[] {
  return [embeddedRow(false), embeddedRow(true)];
}
