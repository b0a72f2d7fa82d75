/**
 * The admin API's part of the registry's OpenAPI document (`/v1/...`: source-routes.ts,
 * registry-routes.ts, identity-route.ts) and the server's own endpoints beside the API (the
 * protected resource metadata of oauth mode, the probes and `/metrics`).
 *
 * The request bodies of `PUT /v1/sources/{name}` and `PUT /v1/registries/{name}` are generated
 * from the zod schemas that parse them (config/registry-schema.ts, the config file's own), so the
 * document cannot drift from what the server accepts; the cross-field rules (exactly one source
 * kind, no syncPolicy on a managed source…) are said in words. The responses are the shapes of
 * api/shapes.ts.
 */
import { z } from 'zod';
import { registryBodySchema, sourceBodySchema } from '../config/registry-schema.ts';
import { ROLE_GRANTS } from '../../registry-authz/roles.ts';
import { errors, json, ref, type Json } from './openapi-parts.ts';
import { READ_ONLY_FIELDS } from './shapes.ts';

/** A bearer token in oauth mode, none in anonymous mode (everything is open). */
const BEARER_OR_ANONYMOUS: Json[] = [{ bearerAuth: [] }, {}];

/**
 * The input JSON schema of a zod body schema (refinements and transforms are said in words
 * elsewhere), plus the read-only fields of the GET view, which a body may carry back (ignored).
 */
function bodySchema(schema: z.ZodType, description: string): Json {
  const generated = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as Json;
  const { $schema: _dialect, properties, ...rest } = generated;
  const ignored = Object.fromEntries(READ_ONLY_FIELDS.map((field) => [field, { description: 'Read-only (shown by GET): ignored when sent' }]));
  return { description, ...rest, properties: { ...(properties as Json), ...ignored } };
}

/** What an admin operation's statuses mean: `role` is the role it needs. */
function adminErrors(role: keyof typeof ROLE_GRANTS, codes: readonly number[], own: Readonly<Record<number, string>> = {}): Json {
  return errors(codes, {
    401: 'A bearer token is required (oauth mode), or the one sent is not valid (invalid_token); the WWW-Authenticate challenge names the protected resource metadata',
    403: `The caller lacks the ${role} role (${ROLE_GRANTS[role]}) or superAdmin under auth.authz.roles (insufficient_permissions), or the claims rules refuse the change (claims_not_held)`,
    404: 'Not found, or hidden from the caller: a source or registry whose claims the caller does not satisfy is not there for them',
    ...own,
  });
}

const nameParam = (what: 'source' | 'registry'): Json => ({
  name: 'name',
  in: 'path',
  required: true,
  description: `The ${what}'s name (lowercase letters, digits and "-", at most 63 characters)`,
  schema: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', maxLength: 63 },
});

const pageParams: Json[] = [
  { name: 'cursor', in: 'query', required: false, description: 'The `metadata.nextCursor` of the previous page', schema: { type: 'string' } },
  { name: 'limit', in: 'query', required: false, description: 'Entries per page (1 to 500)', schema: { type: 'integer', minimum: 1, maximum: 500, default: 100 } },
];

const READ_ONLY = 'Read-only fields a GET shows (`origin`, `createdAt`, `updatedAt`, `status`) may be sent back unchanged: they are ignored.';

function sourcePaths(): Json {
  const tags = ['sources'];
  const role = 'manageSources';
  const put = {
    tags,
    summary: 'Create or update a source',
    description:
      'Creates (201) or replaces (200) a source defined through the API. The body is a source as in the configuration file\'s `sources[]`: exactly one of `managed`, `file`, `git`, `api` (cluster sources only in the configuration file), `syncPolicy.interval` (synced kinds; at least 1m through the API), `claims` (a subset of the caller\'s). ' +
      'Held tighter than the configuration file: no secret references, git repositories over http(s) only, public addresses only unless `sync.allowPrivateAddresses`, file paths only under `sync.fileRoot`. ' +
      `${READ_ONLY} A source defined in the configuration file is read-only here (409 config_managed).`,
    security: BEARER_OR_ANONYMOUS,
    parameters: [nameParam('source')],
    requestBody: { required: true, content: json(ref('SourceBody')) },
    responses: {
      '200': { description: 'The source, updated', content: json(ref('Source')) },
      '201': { description: 'The source, created', content: json(ref('Source')) },
      ...adminErrors(role, [400, 401, 403, 404, 409, 413, 415], {
        400: 'The body is not a valid source (each problem named by its path, as `gatehouse registry validate` names them), or the path and body name differ',
        409: 'The source is defined in the configuration file (config_managed)',
      }),
    },
  };
  return {
    '/v1/sources': {
      get: {
        tags,
        summary: 'List the sources',
        description: 'The sources whose claims the caller satisfies, with their sync status.',
        security: BEARER_OR_ANONYMOUS,
        responses: { '200': { description: 'The sources', content: json(ref('SourceList')) }, ...adminErrors(role, [401, 403]) },
      },
    },
    '/v1/sources/{name}': {
      get: {
        tags,
        summary: 'Get a source',
        description: 'The source\'s definition (in the shape of the configuration file) and, for a synced source, its sync status.',
        security: BEARER_OR_ANONYMOUS,
        parameters: [nameParam('source')],
        responses: { '200': { description: 'The source', content: json(ref('Source')) }, ...adminErrors(role, [401, 403, 404]) },
      },
      put,
      delete: {
        tags,
        summary: 'Delete a source',
        description: 'Deletes a source defined through the API, with its entries. A source a registry lists cannot be deleted (409 source_in_use, naming the registries the caller may see).',
        security: BEARER_OR_ANONYMOUS,
        parameters: [nameParam('source')],
        responses: {
          '204': { description: 'Deleted' },
          ...adminErrors(role, [401, 403, 404, 409], { 409: 'The source is defined in the configuration file (config_managed), or a registry lists it (source_in_use, with `registries`)' }),
        },
      },
    },
    '/v1/sources/{name}/entries': {
      get: {
        tags,
        summary: 'List the entries of a source',
        description: 'The servers and skills the source holds (deleted versions left out), one item per entry with all its versions, filtered to the entries the caller may see.',
        security: BEARER_OR_ANONYMOUS,
        parameters: [nameParam('source'), ...pageParams],
        responses: { '200': { description: 'A page of entries', content: json(ref('EntryList')) }, ...adminErrors(role, [400, 401, 403, 404], { 400: 'The cursor or limit is not valid' }) },
      },
    },
    '/v1/sources/{name}/sync': {
      post: {
        tags,
        summary: 'Sync a source now',
        description: 'Syncs a synced source now and answers with its status once the sync ends (200), or after 30 seconds with the status so far while the sync goes on (202). A failed sync is a 200 whose status says why.',
        security: BEARER_OR_ANONYMOUS,
        parameters: [nameParam('source')],
        responses: {
          '200': { description: 'The source after the sync', content: json(ref('Source')) },
          '202': { description: 'The sync is still running: the source with its status so far', content: json(ref('Source')) },
          ...adminErrors(role, [401, 403, 404, 409, 501], { 409: 'The source is a managed source: it is not synced (not_synced)', 501: 'Syncs are not running on this server (not_available)' }),
        },
      },
    },
  };
}

function registryPaths(): Json {
  const tags = ['registries'];
  const role = 'manageRegistries';
  return {
    '/v1/registries': {
      get: {
        tags,
        summary: 'List the registries',
        description: 'The registries whose claims the caller satisfies.',
        security: BEARER_OR_ANONYMOUS,
        responses: { '200': { description: 'The registries', content: json(ref('RegistryList')) }, ...adminErrors(role, [401, 403]) },
      },
    },
    '/v1/registries/{name}': {
      get: {
        tags,
        summary: 'Get a registry',
        security: BEARER_OR_ANONYMOUS,
        parameters: [nameParam('registry')],
        responses: { '200': { description: 'The registry', content: json(ref('Registry')) }, ...adminErrors(role, [401, 403, 404]) },
      },
      put: {
        tags,
        summary: 'Create or update a registry',
        description:
          'Creates (201) or replaces (200) a registry defined through the API: its `sources` in priority order (at most one managed: publishing writes into it; each one the caller may see) and its `claims` (the gate of its consumer API; a subset of the caller\'s). ' +
          `${READ_ONLY} A registry defined in the configuration file is read-only here (409 config_managed).`,
        security: BEARER_OR_ANONYMOUS,
        parameters: [nameParam('registry')],
        requestBody: { required: true, content: json(ref('RegistryBody')) },
        responses: {
          '200': { description: 'The registry, updated', content: json(ref('Registry')) },
          '201': { description: 'The registry, created', content: json(ref('Registry')) },
          ...adminErrors(role, [400, 401, 403, 404, 409, 413, 415], {
            400: 'The body is not a valid registry (each problem named by its path), the path and body name differ, or a source is unknown to the caller (unknown_source)',
            409: 'The registry is defined in the configuration file (config_managed)',
          }),
        },
      },
      delete: {
        tags,
        summary: 'Delete a registry',
        description: 'Deletes a registry defined through the API (its sources stay).',
        security: BEARER_OR_ANONYMOUS,
        parameters: [nameParam('registry')],
        responses: { '204': { description: 'Deleted' }, ...adminErrors(role, [401, 403, 404, 409], { 409: 'The registry is defined in the configuration file (config_managed)' }) },
      },
    },
    '/v1/registries/{name}/entries': {
      get: {
        tags,
        summary: 'List the entries a registry serves',
        description: 'The servers and skills the registry serves (each name from the one source that provides it), one item per entry with its source and all its versions, filtered to the entries the caller may see.',
        security: BEARER_OR_ANONYMOUS,
        parameters: [nameParam('registry'), ...pageParams],
        responses: { '200': { description: 'A page of entries', content: json(ref('EntryList')) }, ...adminErrors(role, [400, 401, 403, 404], { 400: 'The cursor or limit is not valid' }) },
      },
    },
  };
}

/** Preflight of a public document: any origin may read it. */
const preflight = (what: string): Json => ({
  tags: ['meta'],
  summary: `CORS preflight of ${what}`,
  security: [{}],
  responses: { '204': { description: 'Allowed from any origin (GET, HEAD, OPTIONS)' } },
});

function serverPaths(): Json {
  const probe = (what: string, notReady: boolean): Json => ({
    tags: ['operations'],
    summary: what,
    security: [{}],
    responses: {
      '200': { description: 'The probe passes', content: json(ref('ProbeStatus')) },
      ...(notReady ? { '503': { description: 'Not ready: starting (before the first sync of the sources ends) or draining', content: json(ref('ProbeStatus')) } } : {}),
    },
  });
  return {
    '/v1/me': {
      get: {
        tags: ['identity'],
        summary: 'Who the registry thinks the caller is',
        description: 'The subject of the caller\'s token and the roles its claims grant under auth.authz (an empty list in auth-only mode).',
        security: [{ bearerAuth: [] }],
        responses: {
          '200': { description: 'The caller', content: json(ref('Identity')) },
          ...errors([401], { 401: 'No valid bearer token (invalid_token), or the registry runs in anonymous mode and there is no caller identity (anonymous_mode)' }),
        },
      },
    },
    '/.well-known/oauth-protected-resource': {
      get: {
        tags: ['meta'],
        summary: 'OAuth 2.0 protected resource metadata (RFC 9728), oauth mode only',
        description: 'The registry as a protected resource: its `resource` (auth.oauth.resourceUrl) and the `authorization_servers` of its providers. Also served at the path RFC 9728 derives from a resourceUrl with a path (`/.well-known/oauth-protected-resource/<path>`), which a 401\'s WWW-Authenticate names. Not served in anonymous mode (404).',
        security: [{}],
        responses: {
          '200': { description: 'The metadata', content: json(ref('ProtectedResourceMetadata')) },
          ...errors([404], { 404: 'The registry runs in anonymous mode' }),
        },
      },
      options: preflight('the protected resource metadata'),
    },
    '/healthz': { get: probe('Liveness probe', false) },
    '/readyz': { get: probe('Readiness probe: 200 once the server serves (after the first sync of its sources), 503 while it starts or drains', true) },
    '/metrics': {
      get: {
        tags: ['operations'],
        summary: 'Prometheus metrics',
        description: 'The server\'s metrics in the Prometheus text format, sync metrics included (they name every source). On the admin listener (server.admin) when there is one, where it needs no token; otherwise here, with a token in oauth mode (a superAdmin\'s under auth.authz).',
        security: BEARER_OR_ANONYMOUS,
        responses: {
          '200': { description: 'The metrics', content: { 'text/plain': { schema: { type: 'string' } } } },
          ...errors([401, 403, 404], { 403: 'Under auth.authz, only a superAdmin reads the metrics here', 404: 'Served on the admin listener (server.admin) instead' }),
        },
      },
    },
  };
}

/** The admin API's paths and the server's own endpoints. */
export function adminPaths(): Json {
  return { ...sourcePaths(), ...registryPaths(), ...serverPaths() };
}

/** The OPTIONS operation of `/openapi.json` (its GET is with the rest of the document). */
export const openapiPreflight: Json = preflight('this document');

const timestamp: Json = { type: 'string', format: 'date-time' };
const origin: Json = { type: 'string', enum: ['config', 'api'], description: 'Where it is defined: the configuration file (read-only through the API) or the API' };
const nullableTime: Json = { anyOf: [timestamp, { type: 'null' }] };

/** The admin API's schemas, for the document's components. */
export function adminSchemas(): Json {
  const sourceBody = bodySchema(
    sourceBodySchema,
    'A source, as in the configuration file\'s `sources[]` (`name` optional: the path names it). Exactly one of `managed`, `file`, `git`, `api`, `cluster`; `syncPolicy` and `format` not on a managed source, `format` (only `upstream`) on file and git sources only. Through the API: no `cluster`, no secret references, an interval of at least 1m.',
  );
  const bodyProperties = sourceBody.properties as Json;
  const syncPolicy = bodyProperties.syncPolicy as Json;
  (syncPolicy.properties as Json).interval = { type: 'string', description: 'A duration: "90s", "10m", "1h30m"', example: '10m' };
  return {
    SourceBody: sourceBody,
    RegistryBody: bodySchema(registryBodySchema, 'A registry, as in the configuration file\'s `registries[]` (`name` optional: the path names it): its sources in priority order (at most one managed) and its claims.'),
    Source: {
      description: 'A source as the admin API shows it: its definition in the shape of the configuration file, plus read-only fields',
      type: 'object',
      required: ['name', 'claims', 'origin', 'createdAt', 'updatedAt'],
      properties: {
        name: { type: 'string' },
        format: { type: 'string', enum: ['upstream'] },
        managed: bodyProperties.managed,
        file: bodyProperties.file,
        git: bodyProperties.git,
        api: bodyProperties.api,
        // The view fills the kubernetes block's unset fields with null (the config file omits them).
        cluster: { type: 'object', description: '`{manifests: [absolute paths]}` or `{kubernetes: {namespace, labelSelector, kubeconfig}}` (null where unset)' },
        syncPolicy: { type: 'object', required: ['interval'], properties: { interval: { type: 'string', example: '5m' } } },
        claims: ref('ClaimMap'),
        origin,
        createdAt: timestamp,
        updatedAt: timestamp,
        status: ref('SyncStatus'),
      },
      additionalProperties: false,
    },
    SyncStatus: {
      description: 'The sync status of a synced source (not of a managed one)',
      type: 'object',
      required: ['phase', 'message', 'attempts'],
      properties: {
        phase: { type: 'string', enum: ['pending', 'syncing', 'ok', 'failed'] },
        message: { type: ['string', 'null'], description: 'Why the last sync failed, or null' },
        lastAttemptAt: nullableTime,
        lastSuccessAt: nullableTime,
        nextAttemptAt: nullableTime,
        attempts: { type: 'integer', minimum: 0 },
        failedAttempts: { type: 'integer', minimum: 0, description: 'Failed attempts since the last success' },
        servers: { type: 'integer', minimum: 0 },
        skills: { type: 'integer', minimum: 0 },
        revision: { type: 'string', description: 'What was read: a git commit, a digest' },
        skippedCount: { type: 'integer', minimum: 0 },
        skipped: { type: 'array', maxItems: 20, items: { type: 'string' }, description: 'The invalid items skipped, each named with why (the first 20)' },
      },
    },
    SourceList: { type: 'object', required: ['sources'], properties: { sources: { type: 'array', items: ref('Source') } } },
    Registry: {
      description: 'A registry as the admin API shows it',
      type: 'object',
      required: ['name', 'sources', 'claims', 'origin', 'createdAt', 'updatedAt'],
      properties: { name: { type: 'string' }, sources: { type: 'array', items: { type: 'string' } }, claims: ref('ClaimMap'), origin, createdAt: timestamp, updatedAt: timestamp },
      additionalProperties: false,
    },
    RegistryList: { type: 'object', required: ['registries'], properties: { registries: { type: 'array', items: ref('Registry') } } },
    EntryList: {
      description: 'A page of raw entries: one item per server or skill name, with all its live versions',
      type: 'object',
      required: ['entries', 'metadata'],
      properties: {
        entries: {
          type: 'array',
          items: {
            type: 'object',
            required: ['type', 'name', 'claims', 'versions'],
            properties: {
              type: { type: 'string', enum: ['server', 'skill'] },
              name: { type: 'string', description: 'The registry name ("namespace/name")' },
              source: { type: 'string', description: 'The source that provides it (registry entries only)' },
              claims: ref('ClaimMap'),
              versions: {
                type: 'array',
                items: {
                  type: 'object',
                  required: ['version', 'isLatest', 'publishedAt', 'updatedAt'],
                  properties: { version: { type: 'string' }, isLatest: { type: 'boolean' }, publishedAt: timestamp, updatedAt: timestamp, server: ref('ServerDetail'), skill: ref('SkillDetail') },
                  oneOf: [{ required: ['server'] }, { required: ['skill'] }],
                },
              },
            },
          },
        },
        metadata: { type: 'object', required: ['count'], properties: { count: { type: 'integer', minimum: 0 }, nextCursor: { type: 'string' } } },
      },
    },
    Identity: {
      type: 'object',
      required: ['subject', 'roles'],
      properties: { subject: { type: 'string' }, roles: { type: 'array', items: { type: 'string', enum: Object.keys(ROLE_GRANTS) } } },
    },
    ProbeStatus: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ok', 'ready', 'starting', 'draining'] } } },
    ProtectedResourceMetadata: {
      description: 'RFC 9728 protected resource metadata',
      type: 'object',
      required: ['resource'],
      properties: { resource: { type: 'string', format: 'uri' }, authorization_servers: { type: 'array', items: { type: 'string', format: 'uri' } } },
    },
  };
}
