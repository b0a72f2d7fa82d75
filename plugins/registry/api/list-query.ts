/**
 * Query parameters of the list endpoints: `cursor`, `limit` (default 30, at most 100), `search`,
 * `updated_since` (RFC 3339), `version` (`latest` or an exact version) and `include_deleted`
 * (`true` or `false`). Bad values are a 400 that says what is expected.
 *
 * Deleted versions (tombstones) are listed with `include_deleted=true`, and always when
 * `updated_since` is given, as the official registry API does: a mirror following changes learns
 * of deletions.
 */
import { GatewayError } from '@gatehouse-mcp/gateway';

export interface ListQuery {
  readonly cursor: string | null;
  readonly limit: number;
  readonly search: string | null;
  readonly updatedSince: Date | null;
  readonly version: string | null;
  /** Whether tombstones are listed: `include_deleted=true`, or `updated_since` given. */
  readonly includeDeleted: boolean;
}

const DEFAULT_LIMIT = 30;
const MAX_LIMIT = 100;

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function bad(description: string): GatewayError {
  return new GatewayError('invalid_request', description);
}

const CONTROL = /[\x00-\x1f\x7f]/;

export function parseListQuery(query: string, defaults: { limit: number; maxLimit: number } = { limit: DEFAULT_LIMIT, maxLimit: MAX_LIMIT }): ListQuery {
  const params = new URLSearchParams(query);
  const text = (name: string): string | null => {
    const value = params.get(name);
    if (value !== null && CONTROL.test(value)) throw bad(`${name} must not contain control characters (such as %00)`);
    return value === null || value === '' ? null : value;
  };
  let limit = defaults.limit;
  const rawLimit = text('limit');
  if (rawLimit !== null) {
    limit = Number(rawLimit);
    if (!/^\d+$/.test(rawLimit) || limit < 1 || limit > defaults.maxLimit) throw bad(`limit must be an integer from 1 to ${defaults.maxLimit} (got ${JSON.stringify(rawLimit)})`);
  }
  let updatedSince: Date | null = null;
  const rawSince = text('updated_since');
  if (rawSince !== null) {
    updatedSince = new Date(rawSince);
    if (!RFC3339.test(rawSince) || Number.isNaN(updatedSince.getTime())) {
      throw bad(`updated_since must be an RFC 3339 timestamp such as 2025-08-07T13:15:04.280Z (got ${JSON.stringify(rawSince)})`);
    }
    const year = updatedSince.getUTCFullYear();
    if (year < 1 || year > 9999) throw bad(`updated_since must be a time in the years 0001 to 9999 (got ${JSON.stringify(rawSince)})`);
  }
  const includeDeleted = includeDeletedOf(text('include_deleted'));
  return { cursor: text('cursor'), limit, search: text('search'), updatedSince, version: text('version'), includeDeleted: includeDeleted || updatedSince !== null };
}

/** `include_deleted` (absent: false). */
export function includeDeletedOf(value: string | null): boolean {
  if (value === null || value === 'false') return false;
  if (value === 'true') return true;
  throw bad(`include_deleted must be true or false (got ${JSON.stringify(value)})`);
}
