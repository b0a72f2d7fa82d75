/**
 * Turns plugin definitions and their raw config into running plugin instances, at start: the
 * plugin's config schema is checked (problems named by their YAML path), and user plugins named
 * in the config are imported from their module.
 *
 * A config names a plugin module by path (absolute once validated: a relative one resolves against
 * the config file's directory) or by package name. A package name resolves as an import written in
 * a file of the config file's directory would: node_modules folders upward from there, the
 * package's "exports" with the import condition (import-meta-resolve is Node's own ESM resolver,
 * which Node 20 offers only from the importing module). So the plugin a project installs beside its
 * config is found, not one that happens to be in the gateway's install.
 */
import { join, isAbsolute } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { resolve as resolveImport } from 'import-meta-resolve';
import { StartupError } from '../base/errors.ts';
import type { Plugin, PluginDefinition, PluginHost } from './plugin.ts';

/** A plugin to start: its definition, its raw config, and where that config came from. */
export interface PluginSpec {
  readonly definition: PluginDefinition<unknown>;
  readonly config: unknown;
  /** YAML path of the config (e.g. `VirtualMCPServer/vmcp spec.plugins[0].config`), or a description. */
  readonly source: string;
}

/** A plugin's own config was refused by its schema (or it could not be loaded): every problem, each with its path. */
export class PluginConfigError extends StartupError {}

function isDefinition(value: unknown): value is PluginDefinition<unknown> {
  const v = value as PluginDefinition<unknown> | null;
  return typeof v === 'object' && v !== null && typeof v.name === 'string' && typeof v.create === 'function';
}

/** The longest reason a load failure gives (a transform error can quote much of the file). */
const MAX_REASON = 600;

/** An error's message on one line (a transform error spans several), shortened. */
function reasonOf(err: unknown): string {
  const message = (err instanceof Error ? err.message : String(err)).split('\n').map((line) => line.trim()).filter((line) => line !== '').join(' ');
  const reason = message.length > MAX_REASON ? `${message.slice(0, MAX_REASON - 3)}...` : message;
  // What Node says when a .ts or .js file written as ESM is loaded as CommonJS: its folder lacks "type": "module".
  if ((err as { code?: unknown } | null)?.code === 'ERR_REQUIRE_CYCLE_MODULE') {
    return `${reason} (a plugin written with import/export in a .ts or .js file needs "type": "module" in the package.json of its folder)`;
  }
  return reason;
}

/**
 * The file a plugin module names: an absolute path as it is, a package name (or package subpath)
 * resolved from `fromDir`. Throws Node's resolution error (ERR_MODULE_NOT_FOUND, ...) when there is none.
 */
export function resolvePluginModule(module: string, fromDir: string): string {
  if (isAbsolute(module)) return module;
  const url = resolveImport(module, pathToFileURL(join(fromDir, '/')).href);
  return url.startsWith('file:') ? fileURLToPath(url) : url;
}

/** A plugin module loaded: its definition, or why it cannot be used (one line). */
export type LoadedPlugin = { readonly ok: true; readonly definition: PluginDefinition<unknown> } | { readonly ok: false; readonly problem: string };

/**
 * Loads the plugin module `module` (an absolute path, or a package name resolved from `fromDir`):
 * its default export (or `plugin`) must be a plugin definition. Returns why not otherwise.
 */
export async function loadPluginModule(module: string, fromDir: string): Promise<LoadedPlugin> {
  let loaded: Record<string, unknown>;
  try {
    const resolved = resolvePluginModule(module, fromDir);
    loaded = (await import(isAbsolute(resolved) ? pathToFileURL(resolved).href : resolved)) as Record<string, unknown>;
  } catch (err) {
    return { ok: false, problem: `cannot load plugin module "${module}": ${reasonOf(err)}` };
  }
  const definition = loaded.default ?? loaded.plugin;
  if (!isDefinition(definition)) {
    return { ok: false, problem: `module "${module}" does not export a plugin (a default export made with definePlugin)` };
  }
  return { ok: true, definition };
}

/** Imports a plugin module named in the config (see loadPluginModule); a PluginConfigError names `source` and why not. */
export async function importPlugin(module: string, fromDir: string, source: string): Promise<PluginDefinition<unknown>> {
  const loaded = await loadPluginModule(module, fromDir);
  if (!loaded.ok) throw new PluginConfigError([`${source}: ${loaded.problem}`]);
  return loaded.definition;
}

/**
 * Validates each plugin's config (all problems at once), then creates the plugins in order;
 * `existing` gives the instance to take instead of creating one (a plugin kept across reloads).
 */
export async function createPlugins(
  specs: readonly PluginSpec[],
  host: (name: string) => PluginHost,
  existing: (definition: PluginDefinition<unknown>) => Plugin | undefined = () => undefined,
): Promise<Plugin[]> {
  const problems: string[] = [];
  const configs: unknown[] = [];
  for (const spec of specs) {
    const schema = spec.definition.config;
    if (schema === undefined) {
      configs.push(spec.config);
      continue;
    }
    const parsed = schema.safeParse(spec.config);
    if (parsed.success) {
      configs.push(parsed.data);
    } else {
      configs.push(undefined);
      for (const issue of parsed.error.issues) {
        const path = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
        problems.push(`${spec.source}${path}: ${issue.message}`);
      }
    }
  }
  if (problems.length > 0) throw new PluginConfigError(problems);
  const plugins: Plugin[] = [];
  for (let i = 0; i < specs.length; i++) {
    const definition = specs[i]!.definition;
    plugins.push(existing(definition) ?? (await definition.create(configs[i], host(definition.name))));
  }
  return plugins;
}
