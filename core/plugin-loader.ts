/**
 * Turns plugin definitions and their raw config into running plugin instances, at start: the
 * plugin's config schema is checked (problems named by their YAML path), and user plugins named
 * in the config are imported from their module.
 */
import { pathToFileURL } from 'node:url';
import { isAbsolute } from 'node:path';
import { StartupError } from './errors.ts';
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

/** Imports a plugin module named in the config: its default export (or `plugin`) must be a plugin definition. */
export async function importPlugin(module: string, source: string): Promise<PluginDefinition<unknown>> {
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(isAbsolute(module) ? pathToFileURL(module).href : module)) as Record<string, unknown>;
  } catch (err) {
    throw new PluginConfigError([`${source}: cannot load plugin module "${module}": ${(err as Error).message}`]);
  }
  const definition = loaded.default ?? loaded.plugin;
  if (!isDefinition(definition)) {
    throw new PluginConfigError([`${source}: module "${module}" does not export a plugin (a default export made with definePlugin)`]);
  }
  return definition;
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
