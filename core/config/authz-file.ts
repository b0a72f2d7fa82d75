/**
 * ToolHive's authorization file (`thv run --authz-config`, and the content of the key of an
 * authorization ConfigMap): `version`, `type: cedarv1`, `cedar: {policies, entities_json,
 * group_claim_name, role_claim_name, group_entity_type, multi_valued_claims}`, in JSON or YAML.
 * Read for `spec.incomingAuth.authzConfig` of `type: file` (a Gatehouse extension) and `type:
 * configMap`; every problem with its line and column in the file's text, a policy's at the
 * character Cedar names (a JSON string maps as a YAML double-quoted scalar does).
 */
import { z } from 'zod';
import { text } from './formats.ts';
import { addEntityTypeIssue, addPolicySetIssues, claimName, DEFAULT_GROUP_ENTITY_TYPE, groupEntityType, multiValuedClaims, policiesSchema, unsupportedUpstream, type AuthzPolicyChecks } from './authz-policy.ts';
import { formatPath, issueReports, placeReport, schemaIssueMessage } from './problems.ts';
import { parseYamlDocuments, type Position } from './yaml.ts';

/** An authorization file larger than this is refused (a policy file is kilobytes). */
export const MAX_AUTHZ_FILE_BYTES = 1024 * 1024;

/** ToolHive's authorization file (`authorizers.Config` + `cedar.ConfigOptions`). */
export const authzFileSchema = z.strictObject({
  version: text,
  type: z.literal('cedarv1', {
    error: (issue) => (issue.input === undefined ? undefined : `must be "cedarv1": Gatehouse decides with Cedar only (ToolHive's httpv1, an external decision point, is not supported)`),
  }),
  cedar: z.strictObject({
    policies: policiesSchema,
    entities_json: z.string().default(''),
    primary_upstream_provider: unsupportedUpstream('primary_upstream_provider').optional(),
    group_claim_name: claimName.optional(),
    role_claim_name: claimName.optional(),
    group_entity_type: groupEntityType.optional(),
    multi_valued_claims: multiValuedClaims.optional(),
  }),
});

export type AuthzFile = z.output<typeof authzFileSchema>;

/** A problem of an authorization file's text: where in it (1-based; 0: the file as a whole), at which field. */
export interface AuthzFileProblem extends Position {
  readonly path: string;
  readonly message: string;
}

/** How a file's policies are checked: Cedar's checks (none: shapes only) and the group entity type the VirtualMCPServer sets over the file's (checked there). */
export interface AuthzFileCheck {
  readonly checks: AuthzPolicyChecks | null;
  readonly groupEntityType: string | undefined;
}

const at = (line: number, column: number, path: string, message: string): AuthzFileProblem => ({ line, column, path, message });

/**
 * The file's text (JSON is read as YAML) validated: the file, or every problem with its position
 * in `content` and its field's path (`cedar.policies[1]`).
 */
export function parseAuthzFile(content: string, check: AuthzFileCheck): { file: AuthzFile | null; problems: AuthzFileProblem[] } {
  const problems: AuthzFileProblem[] = [];
  const yaml = parseYamlDocuments(content);
  for (const error of yaml.errors) problems.push(at(error.position.line, error.position.column, '', `syntax error: ${error.message}`));
  const [document, ...others] = yaml.documents;
  for (const extra of others) {
    const { line, column } = extra.locate([]);
    problems.push(at(line, column, '', 'an authorization file is one document: remove the extra one'));
  }
  if (document === undefined) {
    if (problems.length === 0) problems.push(at(0, 0, '', 'the file is empty: it needs version: "1.0", type: cedarv1 and cedar: {policies: [...]}'));
    return { file: null, problems };
  }
  const result = authzFileSchema
    .superRefine((file, ctx) => {
      if (check.checks === null) return;
      const { policies, entities_json: entitiesJson } = file.cedar;
      if (!check.groupEntityType) addEntityTypeIssue(ctx, check.checks, file.cedar.group_entity_type, ['cedar', 'group_entity_type']);
      const type = check.groupEntityType || file.cedar.group_entity_type || DEFAULT_GROUP_ENTITY_TYPE;
      addPolicySetIssues(ctx, check.checks, { policies, entitiesJson, groupEntityType: type }, { policies: ['cedar', 'policies'], entitiesJson: ['cedar', 'entities_json'] });
    })
    .safeParse(document.value, { error: schemaIssueMessage });
  if (!result.success) {
    for (const issue of result.error.issues) {
      for (const report of issueReports(issue)) {
        const { line, column, message } = placeReport(report, document);
        problems.push(at(line, column, formatPath(report.path), message));
      }
    }
  }
  if (problems.length > 0 || !result.success) return { file: null, problems };
  return { file: result.data, problems };
}

/** The UTF-16 offset of a 1-based line and column of `content` (the inverse of a position). */
export function offsetOf(content: string, line: number, column: number): number {
  let offset = 0;
  for (let l = 1; l < line; l++) {
    const next = content.indexOf('\n', offset);
    if (next === -1) return content.length;
    offset = next + 1;
  }
  return Math.min(content.length, offset + Math.max(0, column - 1));
}
