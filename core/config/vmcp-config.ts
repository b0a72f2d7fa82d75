/**
 * The vMCP config loader: a multi-document YAML file of Kubernetes-shaped resources in, the
 * resolved `VmcpConfig` out, or every problem of the file at once.
 *
 * Steps: parse the YAML (syntax errors are problems); identify each document's kind and name;
 * check names are unique and there is exactly one VirtualMCPServer; index the names the file
 * defines; validate every resource against its schema with that index (so references are
 * checked in the same pass); then assemble the resolved config (vmcp-resolve.ts).
 */
import { dirname, resolve } from 'node:path';
import type { z } from 'zod';
import type { AuthzPolicyChecks } from './authz-policy.ts';
import { didYouMean, issueReports, loadFile, placeReport, validateFile, formatPath, schemaIssueMessage, sortProblems } from './problems.ts';
import type { ConfigProblem, PathSegment, Validation } from './problems.ts';
import { RESOURCE_KINDS, resourceSchemas } from './vmcp-schema.ts';
import type { ReferenceIndex, ResourceKind } from './vmcp-schema.ts';
import type { ConfigMapEntry } from './schema-parts.ts';
import { assemble, type ParsedResources } from './vmcp-resolve.ts';
import { pluginProblems } from './plugin-configs.ts';
import { SecretStore } from './secrets.ts';
import type { VmcpConfig } from './vmcp-types.ts';
import { isMapping, parseYamlDocuments } from './yaml.ts';
import type { LocateTarget, YamlDocument } from './yaml.ts';

export type VmcpValidation = Validation<VmcpConfig>;

/**
 * What validation is given besides the text: Cedar's checks of `spec.incomingAuth.authzConfig`'s
 * policies (the `gatehouse` command gives the cedar-authz plugin's). Without them the policies'
 * shapes are checked here and their Cedar text when the plugin starts.
 */
export interface VmcpValidateOptions {
  readonly authzChecks?: AuthzPolicyChecks;
}

/**
 * The resolved config of `file`, or a `ConfigError` listing every problem in it: the file's own
 * checks (validateVmcpText); the plugins it names are loaded when the gateway starts.
 */
export const loadVmcpConfig = (file: string, options: VmcpValidateOptions = {}): Promise<VmcpConfig> => loadFile(file, (text, name) => validateVmcpText(text, name, options));

/**
 * For `gatehouse vmcp validate`, `serve` and reloads: the resolved config, or every problem (sorted
 * by position), the file's own and its plugins' (validateVmcpTextAndPlugins).
 */
export const validateVmcpFile = (file: string, options: VmcpValidateOptions = {}): Promise<VmcpValidation> =>
  validateFile(file, (text, name) => validateVmcpTextAndPlugins(text, name, options));

/** Validate YAML text as the content of `file` (relative plugin modules resolve against its directory); no plugin code runs. */
export function validateVmcpText(text: string, file: string, options: VmcpValidateOptions = {}): VmcpValidation {
  return checkText(text, file, options).validation;
}

/**
 * validateVmcpText, then the plugins the text names: each module loaded and each `config` checked
 * by its plugin's schema (plugin-configs.ts); every problem of both at once.
 */
export async function validateVmcpTextAndPlugins(text: string, file: string, options: VmcpValidateOptions = {}): Promise<VmcpValidation> {
  const { validation, vmcp } = checkText(text, file, options);
  const problems = vmcp === null ? [] : await pluginProblems(vmcp.document, vmcp.label, dirname(resolve(file)), file);
  if (problems.length === 0) return validation;
  return { ok: false, problems: sortProblems([...(validation.ok ? [] : validation.problems), ...problems]) };
}

/** The file's own checks, and its VirtualMCPServer document (the first; null when there is none or it has syntax errors). */
function checkText(text: string, file: string, options: VmcpValidateOptions): { validation: VmcpValidation; vmcp: ResourceEntry | null } {
  const problems: ConfigProblem[] = [];
  const report: Report = (document, resource, path, message, target = 'value', locatePath = path) => {
    const { line, column } = document.locate(locatePath, target);
    problems.push({ file, line, column, resource, path: formatPath(path), message });
  };
  /** One problem per zod issue (per key for unknown fields), at the position of its path, or inside its value, or where it was found. */
  const reportIssue = (issue: z.core.$ZodIssue, entry: ResourceEntry): void => {
    for (const found of issueReports(issue)) {
      if (found.elsewhere !== undefined) problems.push({ file, ...found.elsewhere });
      else {
        const { line, column, message } = placeReport(found, entry.document);
        problems.push({ file, line, column, resource: entry.label, path: formatPath(found.path), message });
      }
    }
  };

  const yaml = parseYamlDocuments(text);
  const entries = yaml.documents.map((document) => identify(document, report));
  for (const error of yaml.errors) {
    const { line, column } = error.position;
    const resource = entries.find((entry) => entry.document.number === error.document)?.label ?? `document ${error.document}`;
    problems.push({ file, line, column, resource, path: '', message: `YAML syntax error: ${error.message}` });
  }
  checkNames(entries, file, problems, report);

  const index = buildIndex(entries, dirname(resolve(file)));
  const schemas = resourceSchemas(index, options.authzChecks ?? null);
  const parsed: ParsedResources = { MCPGroup: [], MCPServer: [], VirtualMCPServer: [], MCPExternalAuthConfig: [], Secret: [], ConfigMap: [] };
  for (const entry of entries) {
    // A document with syntax errors is only a best-effort recovery: its problems would mislead.
    if (entry.kind === null || entry.document.broken) continue;
    const check = <T>(schema: z.ZodType<T>): T | null => {
      const result = schema.safeParse(entry.document.value, { error: schemaIssueMessage });
      if (result.success) return result.data;
      for (const issue of result.error.issues) reportIssue(issue, entry);
      return null;
    };
    switch (entry.kind) {
      case 'MCPGroup': collect(parsed.MCPGroup, check(schemas.MCPGroup)); break;
      case 'MCPServer': collect(parsed.MCPServer, check(schemas.MCPServer)); break;
      case 'VirtualMCPServer': collect(parsed.VirtualMCPServer, check(schemas.VirtualMCPServer)); break;
      case 'MCPExternalAuthConfig': collect(parsed.MCPExternalAuthConfig, check(schemas.MCPExternalAuthConfig)); break;
      case 'Secret': collect(parsed.Secret, check(schemas.Secret)); break;
      case 'ConfigMap': collect(parsed.ConfigMap, check(schemas.ConfigMap)); break;
    }
  }
  const vmcp = entries.find((entry) => entry.kind === 'VirtualMCPServer' && !entry.document.broken) ?? null;
  if (problems.length > 0) return { validation: { ok: false, problems: sortProblems(problems) }, vmcp };
  return { validation: { ok: true, config: assemble(parsed, resolve(file)) }, vmcp };
}

/** Record a problem at `path` of a document; the position is that of `locatePath` (default: `path`). */
type Report = (
  document: YamlDocument,
  resource: string,
  path: readonly PathSegment[],
  message: string,
  target?: LocateTarget,
  locatePath?: readonly PathSegment[],
) => void;

interface ResourceEntry {
  readonly document: YamlDocument;
  /** Null when the document has no known kind (reported). */
  readonly kind: ResourceKind | null;
  readonly name: string | null;
  /** `Kind/name`, `Kind (document N)` or `document N`: the resource in messages. */
  readonly label: string;
}

function collect<T>(list: T[], item: T | null): void {
  if (item !== null) list.push(item);
}

function isKind(value: unknown): value is ResourceKind {
  return typeof value === 'string' && (RESOURCE_KINDS as readonly string[]).includes(value);
}

function identify(document: YamlDocument, report: Report): ResourceEntry {
  const value = document.value;
  const fallback = `document ${document.number}`;
  if (!isMapping(value)) {
    if (!document.broken) report(document, fallback, [], 'a resource must be a mapping with apiVersion, kind, metadata and spec');
    return { document, kind: null, name: null, label: fallback };
  }
  const kinds = RESOURCE_KINDS.join(', ');
  if (!isKind(value.kind)) {
    const message =
      typeof value.kind === 'string'
        ? `unknown kind ${JSON.stringify(value.kind)}${didYouMean(value.kind, RESOURCE_KINDS)}: expected one of ${kinds}`
        : `is required: one of ${kinds}`;
    if (!document.broken) report(document, fallback, ['kind'], message);
    return { document, kind: null, name: null, label: fallback };
  }
  const name = isMapping(value.metadata) && typeof value.metadata.name === 'string' ? value.metadata.name : null;
  return { document, kind: value.kind, name, label: name === null ? `${value.kind} (${fallback})` : `${value.kind}/${name}` };
}

/** Names are unique per kind; a file holds exactly one VirtualMCPServer. */
function checkNames(entries: readonly ResourceEntry[], file: string, problems: ConfigProblem[], report: Report): void {
  const first = new Map<string, ResourceEntry>();
  let vmcp: ResourceEntry | null = null;
  for (const entry of entries) {
    if (entry.kind === 'VirtualMCPServer') {
      if (vmcp === null) vmcp = entry;
      else {
        const where = vmcp.document.locate(['kind']).line;
        report(entry.document, entry.label, ['kind'], `a file holds exactly one VirtualMCPServer, and ${vmcp.label} is already defined at line ${where}`);
      }
    }
    if (entry.kind === null || entry.name === null) continue;
    const key = `${entry.kind}/${entry.name}`;
    const previous = first.get(key);
    if (previous === undefined) first.set(key, entry);
    else {
      const where = previous.document.locate(['metadata', 'name']).line;
      report(entry.document, entry.label, ['metadata', 'name'], `duplicate name: ${key} is already defined at line ${where}`);
    }
  }
  if (vmcp === null) {
    problems.push({ file, line: 0, column: 0, resource: '', path: '', message: 'no VirtualMCPServer: the file must define exactly one (kind: VirtualMCPServer)' });
  }
}

/** Plain-data lookup of `path` in a document (undefined when absent). */
function valueAt(value: unknown, ...path: string[]): unknown {
  let current = value;
  for (const key of path) current = isMapping(current) ? current[key] : undefined;
  return current;
}

/** The names every resource may refer to, read leniently before validation. */
function buildIndex(entries: readonly ResourceEntry[], configDir: string): ReferenceIndex {
  const named = (kind: ResourceKind) => entries.filter((entry) => entry.kind === kind && entry.name !== null);
  const servers = new Map<string, string | undefined>();
  for (const entry of named('MCPServer')) {
    const groupRef = valueAt(entry.document.value, 'spec', 'groupRef');
    if (entry.name !== null && !servers.has(entry.name)) servers.set(entry.name, typeof groupRef === 'string' ? groupRef : undefined);
  }
  const secrets = new SecretStore();
  for (const entry of named('Secret')) {
    if (entry.name !== null && isMapping(entry.document.value)) secrets.add(entry.name, entry.document.value);
  }
  const configMaps = new Map<string, ConfigMapEntry>();
  for (const entry of named('ConfigMap')) {
    const data = valueAt(entry.document.value, 'data');
    if (entry.name !== null && !configMaps.has(entry.name)) configMaps.set(entry.name, { data: isMapping(data) ? data : {}, document: entry.document, label: entry.label });
  }
  const vmcp = entries.find((entry) => entry.kind === 'VirtualMCPServer')?.document.value;
  const groupRef = valueAt(vmcp, 'spec', 'config', 'groupRef');
  const authServer = valueAt(vmcp, 'spec', 'authServerConfig');
  const providers = valueAt(authServer, 'upstreamProviders');
  const providerNames = (Array.isArray(providers) ? providers : []).map((provider) => valueAt(provider, 'name'));
  return {
    configDir,
    groups: new Set(named('MCPGroup').map((entry) => entry.name ?? '')),
    fedGroups: new Set(named('MCPGroup').filter((entry) => valueAt(entry.document.value, 'spec', 'registry') !== undefined).map((entry) => entry.name ?? '')),
    servers,
    externalAuthConfigs: new Set(named('MCPExternalAuthConfig').map((entry) => entry.name ?? '')),
    secrets,
    vmcpGroup: typeof groupRef === 'string' ? groupRef : undefined,
    providers: isMapping(authServer) ? new Set(providerNames.filter((name) => typeof name === 'string')) : null,
    anonymousIncoming: valueAt(vmcp, 'spec', 'incomingAuth', 'type') === 'anonymous',
    configMaps,
  };
}

