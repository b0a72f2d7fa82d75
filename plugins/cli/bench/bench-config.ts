/**
 * The configuration `gatehouse bench` starts its gateway with: the user's file, written anew to
 * a temporary directory with only what the bench must change.
 *
 * - Echo mode (the default): `spec.url` of every MCPServer of the VirtualMCPServer's group is
 *   the echo backend's, `/mcp/<name>` on its port. Everything else stays: incoming auth,
 *   outgoing auth (its STS is called as configured; the echo backend ignores credentials),
 *   aggregation, session storage, plugins.
 * - `--live`: the URLs stay.
 * - Both: a plugin `module` given by relative path or package name becomes the absolute path of
 *   the file it names from the original's directory (the copy lives elsewhere, where neither the
 *   path nor the project's node_modules would be found), and `spec.server.admin.port` becomes 0, so that the bench's gateway never
 *   fights the real one for its admin port (the public port is `--port 0` already). A policy
 *   file (`incomingAuth.authzConfig.file.path`) becomes absolute the same way.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { resolvePluginModule, type VmcpConfig } from '@gatehouse-mcp/gateway';

/** The file a plugin module names, or the module as written when it names none (the gateway then says so). */
function pluginFile(module: string, configDir: string): string {
  try {
    return resolvePluginModule(module, configDir);
  } catch {
    return module;
  }
}

/** The text of the bench's copy of `config`'s file; `backendUrls` (MCPServer name → URL) in echo mode, null with --live. */
export function benchConfigText(config: VmcpConfig, backendUrls: ReadonlyMap<string, string> | null): string {
  const docs = parseAllDocuments(readFileSync(config.file, 'utf8'));
  if (!Array.isArray(docs)) throw new Error(`${config.file}: not a YAML stream`);
  return docs
    .map((doc, i) => {
      const kind = doc.get('kind');
      const name = doc.getIn(['metadata', 'name']);
      if (kind === 'MCPServer' && typeof name === 'string' && backendUrls?.has(name) === true) doc.setIn(['spec', 'url'], backendUrls.get(name));
      if (kind === 'VirtualMCPServer') {
        config.plugins.forEach((plugin, index) => {
          if (typeof doc.getIn(['spec', 'plugins', index, 'module']) === 'string') doc.setIn(['spec', 'plugins', index, 'module'], pluginFile(plugin.module, config.dir));
        });
        if (config.server.admin !== null) doc.setIn(['spec', 'server', 'admin', 'port'], 0);
        // A policy file is read from the original's directory too.
        const policyFile = doc.getIn(['spec', 'incomingAuth', 'authzConfig', 'file', 'path']);
        if (typeof policyFile === 'string') doc.setIn(['spec', 'incomingAuth', 'authzConfig', 'file', 'path'], resolve(config.dir, policyFile));
      }
      const text = doc.toString();
      return i === 0 || text.startsWith('---') ? text : `---\n${text}`;
    })
    .join('');
}
