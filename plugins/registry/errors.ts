/**
 * The registry's error catalogue: every code the registry API answers with beyond the core's
 * (core/base/errors.ts: invalid_request 400, not_found 404, forbidden 403, insufficient_permissions
 * 403, unsupported_media_type 415, payload_too_large 413, invalid_token 401), with its status.
 * The claims rules of publishing have theirs in plugins/registry-authz/errors.ts. Every error body
 * is `{"error": "<code>", "error_description": "…"}`.
 */
import { errorCatalogue } from '@gatehouse-mcp/gateway';

const STATUS = {
  /** The body is not JSON at all. */
  malformed_json: 400,
  /** A registry names a source that does not exist (or that the caller may not see). */
  unknown_source: 400,
  /** `/v1/me` when there is no caller identity to show. */
  anonymous_mode: 401,
  /** Publishing to a registry that has no managed source. */
  not_publishable: 403,
  /** Publishing a name another source already provides in a registry that serves this one. */
  name_conflict: 409,
  /** Publishing a version that exists: versions are immutable. */
  version_exists: 409,
  /** Deleting a source a registry still uses. */
  source_in_use: 409,
  /** Changing through the API what the configuration file defines. */
  config_managed: 409,
  /** Syncing a source that is not synced (a managed source). */
  not_synced: 409,
  /** A source kind this build does not run yet. */
  not_available: 501,
} as const;

/** The GatewayError for a registry code, with the status the catalogue gives it. */
export const registryError = errorCatalogue(STATUS);
