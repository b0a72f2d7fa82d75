/**
 * The built-in plugins a vMCP config asks for, in chain order (incoming auth first). Parts of the
 * config that validate but that this build cannot serve yet are reported all at once, each with
 * its YAML path, so that `serve` refuses to start rather than run without them.
 */
import type { VmcpConfig } from '../../core/config/vmcp-types.ts';
import type { PluginSpec } from '../../core/plugin-loader.ts';
import { NotAvailableError } from '../../core/errors.ts';
import { anonymousAuth } from '../incoming-auth/anonymous.ts';
import { oidcAuth } from '../incoming-auth/oidc.ts';

export function vmcpBuiltins(config: VmcpConfig): PluginSpec[] {
  const where = `VirtualMCPServer/${config.name}`;
  const missing: string[] = [];
  const specs: PluginSpec[] = [];

  const incoming = config.incomingAuth;
  if (incoming.type === 'anonymous') {
    specs.push({ definition: anonymousAuth, config: undefined, source: `${where} spec.incomingAuth` });
  } else {
    specs.push({ definition: oidcAuth, config: incoming, source: `${where} spec.incomingAuth` });
  }
  if (config.authServer !== null) {
    missing.push(`${where} spec.authServerConfig: the embedded authorization server is not available in this version yet`);
  }
  for (const backend of config.backends) {
    if (backend.externalAuth !== null) {
      missing.push(
        `MCPServer/${backend.name}: outgoing auth "${backend.externalAuth.type}" (MCPExternalAuthConfig/${backend.externalAuth.name}) is not available in this version yet`,
      );
    }
  }
  if (missing.length > 0) throw new NotAvailableError(missing);
  return specs;
}
