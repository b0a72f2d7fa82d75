/**
 * The body of `POST /{registry}/v0.1/publish`: a server.json document (or a skill document with
 * `"type": "skill"`) with the registry's publish fields, `name`, `version`, `url`,
 * `description`, and an optional `claims` map.
 *
 * What is stored and served is the document without `type` and `claims` (those belong to the
 * registry, not to the server). For a server given a `url` but no `remotes`, the URL is also
 * offered as its streamable-HTTP remote, so that clients reading server.json find it where the
 * format puts it.
 */
import { GatewayError } from '../../../core/errors.ts';
import { claimMapSchema } from '../config/registry-schema.ts';
import type { ClaimMap } from '../../registry-authz/claims.ts';
import type { EntryKind } from '../store/records.ts';
import { entryNameProblem, versionProblem } from './names.ts';

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

/** The payload, or a 400 naming every problem of the body. */
export function parsePublishPayload(body: unknown): PublishPayload {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new GatewayError('invalid_request', 'the body must be a JSON object: {"name", "version", "description", "url", "claims"}');
  }
  const fields = body as Record<string, unknown>;
  const problems: string[] = [];
  const type = fields.type ?? 'server';
  if (type !== 'server' && type !== 'skill') problems.push(`type must be "server" (the default) or "skill" (got ${JSON.stringify(type)})`);
  const nameProblem = entryNameProblem(fields.name);
  if (nameProblem !== null) problems.push(nameProblem);
  const version = versionProblem(fields.version);
  if (version !== null) problems.push(version);
  if (typeof fields.description !== 'string' || fields.description.trim() === '') problems.push('description is required: a non-empty string saying what it does');
  if (fields.url !== undefined && (typeof fields.url !== 'string' || !isHttpUrl(fields.url))) problems.push(`url must be an absolute http(s) URL (got ${JSON.stringify(fields.url)})`);
  if (fields.title !== undefined && typeof fields.title !== 'string') problems.push('title must be a string');
  let claims: ClaimMap | undefined;
  if (fields.claims !== undefined) {
    const parsed = claimMapSchema.safeParse(fields.claims);
    if (parsed.success) claims = parsed.data;
    else {
      for (const issue of parsed.error.issues) {
        const at = issue.path.length === 0 ? 'claims' : `claims.${issue.path.map(String).join('.')}`;
        problems.push(`${at}: ${issue.message}`);
      }
    }
  }
  if (problems.length > 0) throw new GatewayError('invalid_request', problems.join('; '));

  const kind = type as EntryKind;
  const { type: _type, claims: _claims, ...document } = fields;
  if (kind === 'server' && typeof fields.url === 'string' && document.remotes === undefined) {
    document.remotes = [{ type: 'streamable-http', url: fields.url }];
  }
  return { kind, name: fields.name as string, version: fields.version as string, claims, document };
}
