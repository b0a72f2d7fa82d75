/**
 * The authorization config of the Cedar authorizer, with ToolHive's field names:
 *
 * - `authzConfigSchema`: ToolHive's `AuthzConfigRef` (VirtualMCPServer
 *   `spec.incomingAuth.authzConfig`): `type: inline | configMap`, `inline: {policies,
 *   entitiesJson}`, `configMap: {name, key}`, and the claim mapping `groupClaimName`,
 *   `roleClaimName`, `groupEntityType`. Gatehouse adds `type: file` (`file: {path}`, a file in
 *   ToolHive's format) and `multiValuedClaims` (ToolHive has it only in the file format).
 * - `authzFileSchema`: ToolHive's authorization file (`thv run --authz-config`, and the content of
 *   the ConfigMap's key): `version`, `type: cedarv1`, `cedar: {policies, entities_json,
 *   group_claim_name, role_claim_name, group_entity_type, multi_valued_claims}`.
 *
 * Policies are parsed by Cedar while the config is validated: a problem is put under the policy's
 * YAML node with its line and column inside the policy (`policies[2]: line 1 col 19: ...`).
 */
import { checkParsePolicySet } from '@cedar-policy/cedar-wasm/nodejs';
import {
  addIssue,
  formatPath,
  issueReports,
  nonEmptyText as text,
  parseYamlDocuments,
  quoted as q,
  schemaIssueMessage,
  sortProblems,
  whenMapping,
  z,
  type ConfigProblem,
  type Validation,
} from '@gatehouse-mcp/gateway';
import { checkPolicies, describePolicyProblem, parseEntities } from './policies.ts';
import type { ClaimMapping } from './request.ts';

/** Where the policies are: in the config, in a ConfigMap document of the config file, in a file of ToolHive's format (✚). */
export const AUTHZ_CONFIG_TYPES = ['inline', 'configMap', 'file'] as const;

/** ToolHive's default group entity type (`EntityTypeTHVGroup`). */
export const DEFAULT_GROUP_ENTITY_TYPE = 'THVGroup';

/** ToolHive's policies: at least one, one policy per string, each parsed by Cedar. */
const policiesSchema = z
  .array(z.string(), { error: (issue) => (issue.input === undefined ? undefined : 'must be a list of Cedar policies, one policy per string') })
  .min(1, { error: 'must list at least one policy: with none, every request is denied' })
  .superRefine((policies, ctx) => {
    for (const problem of checkPolicies(policies)) addIssue(ctx, [problem.index ?? 0], describePolicyProblem(problem));
  });

/** ToolHive's `entitiesJson`: a JSON *string* of Cedar entities (the group and role hierarchy). */
const entitiesJsonSchema = z.string().superRefine((json, ctx) => {
  const result = parseEntities(json);
  if (!result.ok) for (const problem of result.problems) ctx.addIssue(describePolicyProblem(problem));
});

/** A claim name (ToolHive: at most 253 characters; a dot path such as `realm_access.roles` reads a nested claim). */
const claimName = z.string().max(253);

/**
 * ToolHive's `validateGroupEntityType`: a Cedar identifier without a namespace (`::`), checked by
 * parsing the policy ToolHive parses with it.
 */
const groupEntityType = z
  .string()
  .max(63)
  .superRefine((type, ctx) => {
    if (type.includes('::')) ctx.addIssue(`must not contain "::": namespaced entity types are not supported, as in ToolHive (got ${q(type)})`);
    else if (type !== '' && checkParsePolicySet({ staticPolicies: `permit(principal in ${type}::"x", action, resource);` }).type === 'failure') {
      ctx.addIssue(`must be a Cedar identifier such as THVGroup (letters, digits, "_", not starting with a digit, not a reserved word) (got ${q(type)})`);
    }
  });

const multiValuedClaims = z.array(text);

const unsupportedUpstream = (field: string) =>
  z.string().superRefine((_, ctx) => {
    ctx.addIssue(`is not supported yet: ${field} takes the claims of an upstream provider's token; Gatehouse's Cedar authorizer reads the claims of the token the client presented`);
  });

/** ToolHive's `InlineAuthzConfig`. */
export const inlineAuthzSchema = z.strictObject({
  policies: policiesSchema,
  entitiesJson: entitiesJsonSchema.default('[]'),
  primaryUpstreamProvider: unsupportedUpstream('primaryUpstreamProvider').optional(),
});

/** ToolHive's `AuthzConfigRef` (+ `file`, `multiValuedClaims`). */
export const authzConfigSchema = z
  .strictObject({
    type: z.enum(AUTHZ_CONFIG_TYPES).default('configMap'),
    inline: inlineAuthzSchema.optional(),
    configMap: z.strictObject({ name: text, key: text.default('authz.json') }).optional(),
    file: z.strictObject({ path: text }).optional(),
    groupClaimName: claimName.optional(),
    roleClaimName: claimName.optional(),
    groupEntityType: groupEntityType.optional(),
    multiValuedClaims: multiValuedClaims.optional(),
  })
  .superRefine((config, ctx) => {
    // ToolHive's CRD rule: the block of the type is set, and no other.
    for (const type of AUTHZ_CONFIG_TYPES) {
      const set = config[type] !== undefined;
      if (config.type === type && !set) addIssue(ctx, [type], `is required when type is ${type}${type === 'inline' ? ': {policies: [...], entitiesJson: "[]"}' : type === 'file' ? ': {path: authz.yaml}' : ': {name, key: authz.json}'}`);
      if (config.type !== type && set) addIssue(ctx, [type], `must not be set when type is ${config.type}`, 'key');
    }
  }, whenMapping);

export type AuthzConfig = z.output<typeof authzConfigSchema>;

/** ToolHive's authorization file (`authorizers.Config` + `cedar.ConfigOptions`). */
export const authzFileSchema = z.strictObject({
  version: text,
  type: z.literal('cedarv1', { error: (issue) => (issue.input === undefined ? undefined : `must be "cedarv1": Gatehouse decides with Cedar only (ToolHive's httpv1, an external decision point, is not supported)`) }),
  cedar: z.strictObject({
    policies: policiesSchema,
    entities_json: entitiesJsonSchema.default(''),
    primary_upstream_provider: unsupportedUpstream('primary_upstream_provider').optional(),
    group_claim_name: claimName.optional(),
    role_claim_name: claimName.optional(),
    group_entity_type: groupEntityType.optional(),
    multi_valued_claims: multiValuedClaims.optional(),
  }),
});

export type AuthzFile = z.output<typeof authzFileSchema>;

/** What an authorizer is made from: the policies, the entity store, the claim mapping and the server name. */
export interface CedarAuthzSettings extends ClaimMapping {
  readonly policies: readonly string[];
  readonly entitiesJson: string;
}

/**
 * An authorization file's text (JSON or YAML: JSON is read as YAML) validated, every problem with
 * `file`'s line and column and the field's path (`cedar.policies[1]: line 2 col 5: ...`).
 */
export function parseAuthzFile(textOfFile: string, file: string): Validation<AuthzFile> {
  const problems: ConfigProblem[] = [];
  const yaml = parseYamlDocuments(textOfFile);
  for (const error of yaml.errors) problems.push({ file, line: error.position.line, column: error.position.column, resource: '', path: '', message: `syntax error: ${error.message}` });
  const [document, ...others] = yaml.documents;
  for (const extra of others) problems.push({ file, ...extra.locate([]), resource: '', path: '', message: 'an authorization file is one document: remove the extra one' });
  if (document === undefined) {
    if (problems.length === 0) problems.push({ file, line: 0, column: 0, resource: '', path: '', message: 'the file is empty: it needs version: "1.0", type: cedarv1 and cedar: {policies: [...]}' });
    return { ok: false, problems: sortProblems(problems) };
  }
  const result = authzFileSchema.safeParse(document.value, { error: schemaIssueMessage });
  if (!result.success) {
    for (const issue of result.error.issues) {
      for (const { path, message, target, locatePath } of issueReports(issue)) problems.push({ file, ...document.locate(locatePath, target), resource: '', path: formatPath(path), message });
    }
  }
  if (problems.length > 0 || !result.success) return { ok: false, problems: sortProblems(problems) };
  return { ok: true, config: result.data };
}

/** ToolHive's defaults: no group claim (only the well-known ones), no role claim, THVGroup. */
function claimMapping(
  fields: { groupClaimName?: string | undefined; roleClaimName?: string | undefined; groupEntityType?: string | undefined; multiValuedClaims?: readonly string[] | undefined },
  serverName: string,
): ClaimMapping {
  return {
    groupClaimName: fields.groupClaimName ?? '',
    roleClaimName: fields.roleClaimName ?? '',
    groupEntityType: fields.groupEntityType || DEFAULT_GROUP_ENTITY_TYPE,
    multiValuedClaims: fields.multiValuedClaims ?? [],
    serverName,
  };
}

/** The settings of an inline config; `serverName` is the `MCP::"<name>"` parent of every resource (the VirtualMCPServer's name). */
export function inlineSettings(config: AuthzConfig, serverName: string): CedarAuthzSettings {
  if (config.inline === undefined) throw new Error(`the authorization config is of type ${config.type}, not inline`);
  return { ...claimMapping(config, serverName), policies: config.inline.policies, entitiesJson: config.inline.entitiesJson };
}

/**
 * The settings of a config whose policies are in a file of ToolHive's format (type configMap or
 * file): the config's claim mapping fields win over the file's when both are set (ToolHive's
 * operator does so for a ConfigMap).
 */
export function fileSettings(config: AuthzConfig, file: AuthzFile, serverName: string): CedarAuthzSettings {
  const cedar = file.cedar;
  return {
    ...claimMapping(
      {
        groupClaimName: config.groupClaimName || cedar.group_claim_name,
        roleClaimName: config.roleClaimName || cedar.role_claim_name,
        groupEntityType: config.groupEntityType || cedar.group_entity_type,
        multiValuedClaims: config.multiValuedClaims ?? cedar.multi_valued_claims,
      },
      serverName,
    ),
    policies: cedar.policies,
    entitiesJson: cedar.entities_json,
  };
}
