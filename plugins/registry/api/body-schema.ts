/**
 * Validating an admin API body with the config file's own schemas: the same rules and the same
 * messages as `gatehouse registry validate`, every problem at once in one 400.
 */
import type { z } from 'zod';
import { formatPath, GatewayError, schemaIssueMessage } from '@gatehouse-mcp/gateway';
import { resourceNameSchema } from '../config/registry-schema.ts';
import { READ_ONLY_FIELDS } from './shapes.ts';

/** The body parsed by `schema`, after dropping the read-only fields a GET shows; a 400 listing every problem otherwise. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown, what: string): z.output<S> {
  let input = body;
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const copy: Record<string, unknown> = { ...(body as Record<string, unknown>) };
    for (const field of READ_ONLY_FIELDS) delete copy[field];
    input = copy;
  }
  const result = schema.safeParse(input, { error: schemaIssueMessage });
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const path = formatPath(issue.path.map((p) => (typeof p === 'number' ? p : String(p))));
    const message = issue.message.replace(/\n/g, '; ');
    return path === '' ? message : `${path}: ${message}`;
  });
  throw new GatewayError('invalid_request', `invalid ${what}: ${problems.join('; ')}`);
}

/** The name in the path must be a valid name, and equal the body's `name` when it has one. */
export function checkPathName(pathName: string, bodyName: string | undefined, what: string): void {
  const valid = resourceNameSchema.safeParse(pathName);
  if (!valid.success) throw new GatewayError('invalid_request', `invalid ${what} name: ${valid.error.issues[0]?.message ?? 'not a valid name'}`);
  if (bodyName !== undefined && bodyName !== pathName) {
    throw new GatewayError('invalid_request', `the body names ${what} ${JSON.stringify(bodyName)} but the path names ${JSON.stringify(pathName)}: they must be the same (renaming is not supported)`);
  }
}
