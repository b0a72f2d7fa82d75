/**
 * `spec.incomingAuth.authzConfig`: who may use which tool, prompt and resource, as Cedar policies
 * in ToolHive's authorization model (the cedar-authz plugin decides). ToolHive's `AuthzConfigRef`
 * with its field names: `type: inline | configMap` (+ `file` ✚), `inline: {policies,
 * entitiesJson}`, `configMap: {name, key}` (a ConfigMap document of this file whose key holds
 * ToolHive's authorization file), `groupClaimName`, `roleClaimName`, `groupEntityType` (+
 * `multiValuedClaims` ✚, which ToolHive has only in the file). ✚: a Gatehouse extension.
 *
 * The policies are read where `type` says (a file's at validation: a reload reads it again) and
 * checked by Cedar (authz-policy.ts), each problem at its character: in this file's YAML, in the
 * policy file, or in the ConfigMap's value. The output is the resolved `AuthzPolicyConfig`.
 */
import { readFileSync, statSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import process from 'node:process';
import { z } from 'zod';
import { MAX_AUTHZ_FILE_BYTES, offsetOf, parseAuthzFile, type AuthzFile, type AuthzFileProblem } from './authz-file.ts';
import {
  addEntityTypeIssue,
  addPolicySetIssues,
  claimName,
  DEFAULT_GROUP_ENTITY_TYPE,
  groupEntityType,
  multiValuedClaims,
  policiesSchema,
  stringList,
  unsupportedUpstream,
} from './authz-policy.ts';
import { addIssue, text, whenMapping, type Ctx } from './formats.ts';
import { formatPath, type ElsewhereProblem, type PathSegment } from './problems.ts';
import { blockOfType, notFound, type ConfigMapEntry, type SchemaContext } from './schema-parts.ts';
import { isMapping } from './yaml.ts';
import type { AuthzPolicyConfig } from './vmcp-types.ts';

/** Where the policies are: in the config, in a ConfigMap document of the config file, in a file of ToolHive's format (✚). */
export const AUTHZ_CONFIG_TYPES = ['inline', 'configMap', 'file'] as const;

const BLOCKS = { inline: 'inline', configMap: 'configMap', file: 'file' } as const;

/** The claim-mapping fields as written (raw: the object's checks run even when a field is invalid). */
interface MappingInput {
  groupClaimName?: unknown;
  roleClaimName?: unknown;
  groupEntityType?: unknown;
  multiValuedClaims?: unknown;
}

const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

/** The mapping of the VirtualMCPServer's fields over the file's (ToolHive's operator does so for a ConfigMap), with ToolHive's defaults. */
function mappingOf(config: MappingInput, file: AuthzFile['cedar'] | null): Omit<AuthzPolicyConfig, 'policies' | 'entitiesJson' | 'source'> {
  return {
    groupClaimName: str(config.groupClaimName) ?? file?.group_claim_name ?? '',
    roleClaimName: str(config.roleClaimName) ?? file?.role_claim_name ?? '',
    groupEntityType: str(config.groupEntityType) ?? (file?.group_entity_type || DEFAULT_GROUP_ENTITY_TYPE),
    multiValuedClaims: stringList(config.multiValuedClaims) ?? file?.multi_valued_claims ?? [],
  };
}

/** A file path as the user would write it: relative to the working directory when under it. */
function shownPath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel !== '' && !rel.startsWith('..') ? rel : path;
}

/** What the policies are read with: the file's index (its directory, its ConfigMaps) and Cedar's checks. */
interface Reading {
  readonly index: SchemaContext['index'];
  readonly checks: SchemaContext['authzChecks'];
}

/** `type: inline`: the policies of the YAML, checked where they are written. */
function fromInline({ checks }: Reading, config: Record<string, unknown>, ctx: Ctx): AuthzPolicyConfig | null {
  const block = isMapping(config.inline) ? config.inline : {};
  const policies = stringList(block.policies);
  const entitiesJson = block.entitiesJson === undefined ? '[]' : block.entitiesJson;
  if (policies === null || typeof entitiesJson !== 'string') return null;
  const mapping = mappingOf(config, null);
  if (checks !== null && policies.length > 0) {
    addPolicySetIssues(ctx, checks, { policies, entitiesJson, groupEntityType: mapping.groupEntityType }, { policies: ['inline', 'policies'], entitiesJson: ['inline', 'entitiesJson'] });
  }
  return { ...mapping, policies, entitiesJson, source: 'spec.incomingAuth.authzConfig.inline' };
}

/** A ToolHive file's content, checked: its problems reported where they are (`place`, at the issue's `at`), its settings under the VirtualMCPServer's mapping. */
function fromFileText(reading: Reading, config: Record<string, unknown>, content: string, source: string, ctx: Ctx, at: PathSegment[], place: (problem: AuthzFileProblem) => ElsewhereProblem): AuthzPolicyConfig | null {
  const { file, problems } = parseAuthzFile(content, { checks: reading.checks, groupEntityType: str(config.groupEntityType) });
  for (const problem of problems) ctx.addIssue({ code: 'custom', path: at, message: problem.message, params: { elsewhere: place(problem) } });
  if (file === null) return null;
  return { ...mappingOf(config, file.cedar), policies: file.cedar.policies, entitiesJson: file.cedar.entities_json, source };
}

/** The text of a policy file (bounded), or null with the problem added at `file.path`. */
function readPolicyFile(absolute: string, ctx: Ctx): string | null {
  try {
    const size = statSync(absolute).size;
    if (size > MAX_AUTHZ_FILE_BYTES) {
      addIssue(ctx, ['file', 'path'], `${shownPath(absolute)} holds ${size} bytes: an authorization file may hold at most ${MAX_AUTHZ_FILE_BYTES}`);
      return null;
    }
    return readFileSync(absolute, 'utf8');
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : `cannot read it: ${err instanceof Error ? err.message : String(err)}`;
    addIssue(ctx, ['file', 'path'], `${shownPath(absolute)}: ${reason} (a relative path resolves against the directory of the config file)`);
    return null;
  }
}

/** `type: file` ✚: a file of ToolHive's format, relative to the config file's directory, read at every validation (a reload too). */
function fromFile(reading: Reading, config: Record<string, unknown>, ctx: Ctx): AuthzPolicyConfig | null {
  const path = isMapping(config.file) ? str(config.file.path) : undefined;
  if (path === undefined) return null;
  const absolute = resolve(reading.index.configDir, path);
  const content = readPolicyFile(absolute, ctx);
  if (content === null) return null;
  const shown = shownPath(absolute);
  return fromFileText(reading, config, content, shown, ctx, ['file', 'path'], (p) => ({ file: shown, line: p.line, column: p.column, resource: '', path: p.path, message: p.message }));
}

/** `type: configMap`: a ConfigMap document of the config file, its key holding ToolHive's file; a problem inside it is put at its character in the ConfigMap's value. */
function fromConfigMap(reading: Reading, config: Record<string, unknown>, ctx: Ctx): AuthzPolicyConfig | null {
  const ref = isMapping(config.configMap) ? config.configMap : {};
  const name = str(ref.name);
  const key = ref.key === undefined ? 'authz.json' : str(ref.key);
  if (name === undefined || key === undefined) return null;
  const entry: ConfigMapEntry | undefined = reading.index.configMaps.get(name);
  if (entry === undefined) {
    addIssue(ctx, ['configMap', 'name'], `${notFound('ConfigMap', name, reading.index.configMaps.keys())}: the ConfigMap is a document of this file (kind: ConfigMap, data: {${JSON.stringify(key)}: <ToolHive's authorization file>})`);
    return null;
  }
  const content = entry.data[key];
  if (typeof content !== 'string') {
    const keys = Object.keys(entry.data);
    addIssue(ctx, ref.key === undefined ? ['configMap', 'name'] : ['configMap', 'key'], `ConfigMap ${JSON.stringify(name)} has no key ${JSON.stringify(key)} (${keys.length === 0 ? 'it has no data' : `its keys: ${keys.join(', ')}`})`);
    return null;
  }
  const valuePath: PathSegment[] = ['data', key];
  const place = (p: AuthzFileProblem): ElsewhereProblem => {
    const exact = p.line === 0 ? null : entry.document.locateInside(valuePath, offsetOf(content, p.line, p.column));
    const position = exact ?? entry.document.locate(valuePath);
    const where = exact === null && p.line > 0 ? `line ${p.line} col ${p.column}: ` : '';
    return { ...position, resource: entry.label, path: formatPath(valuePath), message: `${p.path === '' ? '' : `${p.path}: `}${where}${p.message}` };
  };
  return fromFileText(reading, config, content, `ConfigMap/${name} ${formatPath(valuePath)}`, ctx, ['configMap'], place);
}

const READERS = { inline: fromInline, file: fromFile, configMap: fromConfigMap } as const;

/** `spec.incomingAuth.authzConfig` (ToolHive's `AuthzConfigRef`), resolved to an `AuthzPolicyConfig`. */
export function authzConfigSchema({ index, authzChecks }: SchemaContext) {
  const reading: Reading = { index, checks: authzChecks };
  /** The resolved config of each checked input (the object's check reads the policies; the transform returns them). */
  const resolved = new WeakMap<object, AuthzPolicyConfig>();
  const inline = z.strictObject({
    policies: policiesSchema,
    entitiesJson: z.string().default('[]'),
    primaryUpstreamProvider: unsupportedUpstream('primaryUpstreamProvider').optional(),
  });
  return z
    .strictObject({
      type: z.enum(AUTHZ_CONFIG_TYPES).default('configMap'),
      inline: inline.optional(),
      configMap: z.strictObject({ name: text, key: text.default('authz.json') }).optional(),
      file: z.strictObject({ path: text }).optional(),
      groupClaimName: claimName.optional(),
      roleClaimName: claimName.optional(),
      groupEntityType: groupEntityType.optional(),
      multiValuedClaims: multiValuedClaims.optional(),
    })
    .superRefine(blockOfType(BLOCKS), whenMapping)
    .superRefine((config, ctx) => {
      // Runs even when a field is invalid (every problem at once): the input is read as written.
      const raw = config as Record<string, unknown>;
      if (authzChecks !== null) addEntityTypeIssue(ctx, authzChecks, raw.groupEntityType, ['groupEntityType']);
      const type = raw.type === undefined ? 'configMap' : raw.type;
      if (typeof type !== 'string' || !Object.hasOwn(READERS, type) || raw[type] === undefined) return;
      const settings = READERS[type as keyof typeof READERS](reading, raw, ctx);
      if (settings !== null) resolved.set(config, settings);
    }, whenMapping)
    .transform((config, ctx): AuthzPolicyConfig => {
      const settings = resolved.get(config);
      if (settings !== undefined) return settings;
      ctx.issues.push({ code: 'custom', input: config, message: 'internal error: the authorization config was not resolved' });
      return z.NEVER;
    });
}
