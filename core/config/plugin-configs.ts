/**
 * The plugins a vMCP config file names (`spec.plugins[]`), checked as the gateway would start
 * them: each module loaded (core/plugin-api/plugin-loader.ts), and each entry's `config` parsed by the
 * plugin's own schema. Their problems are the file's, with the same file:line:col, YAML path and
 * did-you-mean as every other (an unknown key of a strict plugin config is matched against the
 * schema's keys), so `gatehouse vmcp validate` refuses what `serve` would.
 *
 * This runs plugin code (the module's top level), which is why it is a step of its own after the
 * file's own checks (vmcp-config.ts) and reads the entries as written: an entry the file's schema
 * refuses is still checked when its module can be found, so every problem shows up in one pass.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadPluginModule, oneLine } from '../plugin-api/plugin-loader.ts';
import { formatPath, issueReports, schemaIssueMessage, type ConfigProblem, type PathSegment } from './problems.ts';
import { isMapping, type YamlDocument } from './yaml.ts';

const PATH = /^\.{1,2}\/|^\//;

/**
 * The module an entry names, as the config keeps it: a path (relative to the config file's
 * directory, or absolute) made absolute; anything else is a package name, kept as written (it is
 * resolved from that directory when loaded).
 */
export function pluginModuleOf(specifier: string, configDir: string): string {
  return PATH.test(specifier) ? resolve(configDir, specifier) : specifier;
}

/** True when `specifier` names a file by path (whose absence the file's schema reports). */
export function isPluginPath(specifier: string): boolean {
  return PATH.test(specifier);
}

/**
 * The problems of the plugins of `document` (a VirtualMCPServer, named `resource` in messages):
 * modules that cannot be loaded or export no plugin (at the `module:` value), configs the plugin's
 * schema refuses (at the offending key or value of `config`).
 */
export async function pluginProblems(document: YamlDocument, resource: string, configDir: string, file: string): Promise<ConfigProblem[]> {
  const spec = isMapping(document.value) ? document.value.spec : undefined;
  const entries = isMapping(spec) && Array.isArray(spec.plugins) ? (spec.plugins as unknown[]) : [];
  const problems: ConfigProblem[] = [];
  const report = (path: readonly PathSegment[], message: string, target: 'key' | 'value' = 'value', locatePath = path): void => {
    const { line, column } = document.locate(locatePath, target);
    problems.push({ file, line, column, resource, path: formatPath(path), message });
  };
  // One at a time, in the file's order: a module's top level may depend on one loaded before it.
  for (const [index, entry] of entries.entries()) {
    if (!isMapping(entry) || typeof entry.module !== 'string' || entry.module === '') continue;
    const at: PathSegment[] = ['spec', 'plugins', index];
    const module = pluginModuleOf(entry.module, configDir);
    if (isPluginPath(entry.module) && !existsSync(module)) continue;
    const loaded = await loadPluginModule(module, configDir);
    if (!loaded.ok) {
      report([...at, 'module'], loaded.problem);
      continue;
    }
    const schema = loaded.definition.config;
    if (schema === undefined) continue;
    let parsed: ReturnType<typeof schema.safeParse>;
    try {
      parsed = schema.safeParse(entry.config, { error: schemaIssueMessage });
    } catch (err) {
      // A check of the plugin's own that throws instead of reporting an issue.
      report([...at, 'config'], `the plugin's schema failed on this config: ${oneLine(err)}`);
      continue;
    }
    if (parsed.success) continue;
    const absent = !('config' in entry);
    for (const issue of parsed.error.issues) {
      for (const { path, message, target, locatePath } of issueReports(issue, [...at, 'config'])) {
        // Without a `config:` there is nothing to point at but the entry: its `module:` line.
        if (absent) report(path, message, 'key', [...at, 'module']);
        else report(path, message, target, locatePath);
      }
    }
  }
  return problems;
}
