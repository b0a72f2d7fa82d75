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

/**
 * How long a plugin module's top level may take to load. A module that awaits something that
 * never comes would otherwise hold `validate`, a start or a reload (and every reload after it)
 * for ever.
 */
export const PLUGIN_LOAD_TIMEOUT_MS = 30_000;

/**
 * Text a plugin or a load failure gave, on one line and shortened, with control characters
 * (CR, NUL, escape sequences) made spaces: it goes into `validate`'s one-line problems and into
 * logs. Never throws, whatever was thrown (a value without a usable toString included).
 */
export function oneLine(value: unknown, max = MAX_REASON): string {
  let text: string;
  try {
    text = value instanceof Error ? value.message : String(value);
  } catch {
    text = 'a value that cannot be shown';
  }
  const line = text.split(/\r?\n/).map((part) => part.replace(/[\x00-\x1f\x7f]/g, ' ').trim()).filter((part) => part !== '').join(' ');
  return line.length > max ? `${line.slice(0, max - 3)}...` : line;
}

/** An error's message on one line (a transform error spans several), shortened, with a hint for the usual mistake. */
function reasonOf(err: unknown): string {
  const reason = oneLine(err);
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
  // A plugin is a file: not a Node built-in (node:fs), nor code written into the config (data:).
  if (!url.startsWith('file:')) throw new Error(`it resolves to ${JSON.stringify(oneLine(url, 64))}, not a file: a plugin module is a path or the name of an installed package`);
  return fileURLToPath(url);
}

/** A plugin module loaded: its definition, or why it cannot be used (one line). */
export type LoadedPlugin = { readonly ok: true; readonly definition: PluginDefinition<unknown> } | { readonly ok: false; readonly problem: string };

/**
 * Loads the plugin module `module` (an absolute path, or a package name resolved from `fromDir`):
 * its default export (or `plugin`) must be a plugin definition. Returns why not otherwise.
 */
export async function loadPluginModule(module: string, fromDir: string): Promise<LoadedPlugin> {
  const named = JSON.stringify(module);
  let loaded: Record<string, unknown>;
  try {
    const url = pathToFileURL(resolvePluginModule(module, fromDir)).href;
    const outcome = await withinLoadTimeout(import(url) as Promise<Record<string, unknown>>);
    if (outcome === null) return { ok: false, problem: `plugin module ${named} did not finish loading in ${PLUGIN_LOAD_TIMEOUT_MS / 1000} s (its top-level code waits on something that does not come)` };
    loaded = outcome;
  } catch (err) {
    return { ok: false, problem: `cannot load plugin module ${named}: ${reasonOf(err)}` };
  }
  const definition = loaded.default ?? loaded.plugin;
  if (!isDefinition(definition)) {
    return { ok: false, problem: `module ${named} does not export a plugin (a default export made with definePlugin)` };
  }
  return { ok: true, definition };
}

/**
 * The import's module, or null when it did not settle within PLUGIN_LOAD_TIMEOUT_MS. The timer
 * holds the process until then: a top-level await that nothing else keeps alive gets this answer,
 * not Node's exit 13.
 */
async function withinLoadTimeout<T>(loading: Promise<T>): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), PLUGIN_LOAD_TIMEOUT_MS);
  });
  try {
    return await Promise.race([loading, timeout]);
  } finally {
    clearTimeout(timer);
  }
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
