/**
 * The body of `POST /{registry}/v0.1/publish`: a server.json document (or a skill document with
 * `"type": "skill"`) with the registry's publish fields, `name`, `version`, `url`,
 * `description`, and an optional `claims` map.
 *
 * What is stored and served is the document without `type` and `claims` (those belong to the
 * registry, not to the server). For a server given a `url` but no `remotes`, the URL is also
 * offered as its streamable-HTTP remote, so that clients reading server.json find it where the
 * format puts it. A skill is named `{namespace, name}` or `name: "namespace/name"`, and stored
 * as `{namespace, name}` either way, as synced skills are (skill-document.ts).
 *
 * A server's stored document must validate against the official server.json schema (2025-12-11)
 * and the official registry's further rules (server-json.ts): every problem is named by its JSON
 * path (`/description: must NOT have more than 100 characters`), all at once. Skills have no
 * official schema: they keep the registry's own rules (name, version, description, title).
 */
import { GatewayError } from '@gatehouse-mcp/gateway';
import { claimMapSchema } from '../config/registry-schema.ts';
import type { ClaimMap } from '../../registry-authz/claims.ts';
import type { EntryKind } from '../store/records.ts';
import { documentName, versionProblem } from './names.ts';
import { canonicalSkill } from './skill-document.ts';
import { describeProblems, serverJsonProblems } from './server-json.ts';

export interface PublishPayload {
  readonly kind: EntryKind;
  readonly name: string;
  readonly version: string;
  /** Undefined when the body has no `claims`. */
  readonly claims: ClaimMap | undefined;
  readonly document: Readonly<Record<string, unknown>>;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/** The top-level field a JSON Pointer is under (`/remotes/0/url` → `remotes`). */
function topField(path: string): string {
  const first = path.split('/')[1] ?? '';
  return first.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** The payload, or a 400 naming every problem of the body. */
export function parsePublishPayload(body: unknown): PublishPayload {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new GatewayError('invalid_request', 'the body must be a JSON object: a server.json {"name", "version", "description", "remotes": [{"type": "streamable-http", "url"}]}, with "claims" when the registry needs them');
  }
  const fields = body as Record<string, unknown>;
  const problems: string[] = [];
  // Fields whose problem the registry's own rules named: the schema's words for them would repeat it.
  const named = new Set<string>();
  const refuse = (field: string, problem: string): void => {
    problems.push(problem);
    named.add(field);
  };
  const type = fields.type ?? 'server';
  if (type !== 'server' && type !== 'skill') refuse('type', `type must be "server" (the default) or "skill" (got ${JSON.stringify(type)})`);
  // A skill may be named `{namespace, name}` (ToolHive's shape, the one stored) or `name: "namespace/name"`.
  const { name, problem: nameProblem } = documentName(type === 'skill' ? 'skill' : 'server', fields);
  if (nameProblem !== null) refuse('name', nameProblem);
  const version = versionProblem(fields.version);
  if (version !== null) refuse('version', version);
  if (typeof fields.description !== 'string' || fields.description.trim() === '') refuse('description', 'description is required: a non-empty string saying what it does');
  const urlValid = typeof fields.url === 'string' && isHttpUrl(fields.url);
  if (fields.url !== undefined && !urlValid) refuse('url', `url must be an absolute http(s) URL (got ${JSON.stringify(fields.url)})`);
  if (fields.title !== undefined && typeof fields.title !== 'string') refuse('title', 'title must be a string');
  let claims: ClaimMap | undefined;
  if (fields.claims !== undefined) {
    const parsed = claimMapSchema.safeParse(fields.claims);
    if (parsed.success) claims = parsed.data;
    else {
      for (const issue of parsed.error.issues) {
        const at = issue.path.length === 0 ? 'claims' : `claims.${issue.path.map(String).join('.')}`;
        refuse('claims', `${at}: ${issue.message}`);
      }
    }
  }

  const { type: _type, claims: _claims, ...fieldsKept } = fields;
  const document = type === 'skill' && name !== undefined ? { ...canonicalSkill(fieldsKept, name) } : fieldsKept;
  if (type === 'server' && urlValid && document.remotes === undefined) {
    document.remotes = [{ type: 'streamable-http', url: fields.url }];
  }
  if (type === 'server') {
    const schemaProblems = serverJsonProblems(document).filter((problem) => !named.has(topField(problem.path)));
    if (schemaProblems.length > 0) problems.push(describeProblems(schemaProblems));
  }
  if (problems.length > 0) throw new GatewayError('invalid_request', problems.join('; '));
  return { kind: type as EntryKind, name: name!, version: fields.version as string, claims, document };
}
