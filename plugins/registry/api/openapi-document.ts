/**
 * The OpenAPI 3.1 document of the registry API, served at `GET /openapi.json`. It is the official
 * MCP registry API (model/official/openapi.json) as Gatehouse serves it:
 *
 * - every path is under `/{registry}/v0.1/` (one server hosts several registries);
 * - the server.json schemas are those of the official schema 2025-12-11 that publishing and
 *   syncing validate with (model/official/server.schema.json), not the draft's;
 * - `ServerResponse` and `ServerList` are the official ones, and skills have the same shapes
 *   under `skill` / `skills` (there is no official skill schema: a skill is an open object);
 * - publishing answers 201 with a Location; its body may carry `type`, `claims` and `url`;
 *   deleting leaves a tombstone; `include_deleted` lists tombstones (always with
 *   `updated_since`); errors are `{"error", "error_description"}`.
 *
 * The admin API (`/v1/...`) and the server's own endpoints (protected resource metadata, probes,
 * `/metrics`) are described by openapi-admin.ts, so that the document names every route the
 * server serves. The document is built once, when this module loads, from the vendored files and
 * the admin API's body schemas.
 */
import { readFileSync } from 'node:fs';
import { OFFICIAL_SCHEMA_VERSION, OFFICIAL_SERVER_SCHEMA } from '../model/official-schema.ts';
import { adminPaths, adminSchemas, openapiPreflight } from './openapi-admin.ts';
import { errors, json, ref, type Json } from './openapi-parts.ts';

const OFFICIAL: Json = JSON.parse(readFileSync(new URL('../model/official/openapi.json', import.meta.url), 'utf8'));

function at(value: unknown, ...path: string[]): Json {
  let node = value;
  for (const key of path) node = (node as Json)[key];
  if (typeof node !== 'object' || node === null) throw new Error(`internal error: the vendored OpenAPI has no ${path.join('.')}`);
  return structuredClone(node as Json);
}

/** `#/definitions/X` references of the JSON schema, as OpenAPI component references. */
function asComponents(definitions: Json): Json {
  return JSON.parse(JSON.stringify(definitions).replaceAll('"$ref":"#/definitions/', '"$ref":"#/components/schemas/'));
}

const registryParam: Json = {
  name: 'registry',
  in: 'path',
  required: true,
  description: 'The name of the registry (one Gatehouse registry server hosts several)',
  schema: { type: 'string', example: 'main' },
};

const includeDeletedParam = (always: boolean): Json => ({
  name: 'include_deleted',
  in: 'query',
  required: false,
  description: always
    ? 'Include deleted versions (tombstones, `status: "deleted"`) in the results; default false, but always true when updated_since is given, so that mirrors learn of deletions'
    : 'Include a deleted version (tombstone, `status: "deleted"`); default false. `latest` never names a deleted version',
  schema: { type: 'boolean', default: false },
});

/** The official parameters of an operation, with Gatehouse's `registry` first and its own where they differ. */
function parameters(path: string, method: string, kind: 'server' | 'skill', replace: Record<string, Json> = {}): Json[] {
  const official = (at(OFFICIAL, 'paths', path, method).parameters as Json[]) ?? [];
  const named = kind === 'server' ? 'serverName' : 'skillName';
  const list = official.map((p) => {
    const own = replace[p.name as string];
    if (own !== undefined) return own;
    if (p.name === 'serverName') return { ...p, name: named, description: `URL-encoded ${kind} name (e.g., "com.example%2Fmy-${kind}")` };
    if (kind === 'skill' && typeof p.description === 'string') return { ...p, description: p.description.replaceAll('servers', 'skills').replaceAll('server', 'skill') };
    return p;
  });
  return [registryParam, ...list];
}

function kindPaths(kind: 'server' | 'skill'): Json {
  const plural = `${kind}s`;
  const Kind = kind === 'server' ? 'Server' : 'Skill';
  const tags = [plural];
  const official = (path: string, method: string): Json => at(OFFICIAL, 'paths', path, method);
  const list = official('/v0.1/servers', 'get');
  const versions = official('/v0.1/servers/{serverName}/versions', 'get');
  const one = official('/v0.1/servers/{serverName}/versions/{version}', 'get');
  const limit: Json = { name: 'limit', in: 'query', required: false, description: 'Maximum number of items to return (1 to 100)', schema: { type: 'integer', minimum: 1, maximum: 100, default: 30 } };
  const search: Json = { name: 'search', in: 'query', required: false, description: `Search ${plural} by name (case-insensitive substring match)`, schema: { type: 'string', example: 'filesystem' } };
  const name = `{${kind}Name}`;
  return {
    [`/{registry}/v0.1/${plural}`]: {
      get: {
        tags,
        summary: `List MCP ${plural}`,
        description: `${kind === 'server' ? list.description : 'Returns a list of the registered skills'}, one item per version, in name and version order, filtered to what the caller may see. Deleted versions are left out unless include_deleted=true or updated_since is given.`,
        parameters: parameters('/v0.1/servers', 'get', kind, { limit, search, include_deleted: includeDeletedParam(true) }),
        responses: { '200': { description: `A list of ${plural}`, content: json(ref(`${Kind}List`)) }, ...errors([400, 401, 403, 404]) },
      },
    },
    [`/{registry}/v0.1/${plural}/${name}/versions`]: {
      get: {
        tags,
        summary: `List all versions of an MCP ${kind}`,
        description: `${versions.description}; deleted versions only with include_deleted=true. 404 when the ${kind} has no version to show.`,
        parameters: parameters('/v0.1/servers/{serverName}/versions', 'get', kind, { include_deleted: includeDeletedParam(false) }),
        responses: { '200': { description: 'The versions, newest publication first', content: json(ref(`${Kind}List`)) }, ...errors([400, 401, 403, 404]) },
      },
    },
    [`/{registry}/v0.1/${plural}/${name}/versions/{version}`]: {
      get: {
        tags,
        summary: `Get a specific MCP ${kind} version`,
        description: `${one.description} A deleted version is found only with include_deleted=true.`,
        parameters: parameters('/v0.1/servers/{serverName}/versions/{version}', 'get', kind, { include_deleted: includeDeletedParam(false) }),
        responses: { '200': { description: `The ${kind} version`, content: json(ref(`${Kind}Response`)) }, ...errors([400, 401, 403, 404]) },
      },
      delete: {
        tags: ['publish'],
        summary: `Delete a specific MCP ${kind} version`,
        description:
          `Deletes a version from the registry's managed source (needs the manageEntries role, the registry's claims and the managed source's). ` +
          'The version stays as a tombstone: `status: "deleted"`, `updatedAt` the deletion time, hidden by default, listed with include_deleted and by updated_since; `latest` moves to the highest remaining version. ' +
          'A deleted version cannot be published again. Entries of synced sources are not deletable here (404).',
        security: [{ bearerAuth: [] }, {}],
        parameters: parameters('/v0.1/servers/{serverName}/versions/{version}', 'delete', kind),
        responses: { '200': { description: 'The tombstone of the deleted version', content: json(ref(`${Kind}Response`)) }, ...errors([401, 403, 404]) },
      },
    },
  };
}

function buildDocument(): Json {
  const officialSchemas = at(OFFICIAL, 'components', 'schemas');
  const serverSchemas = asComponents(at(OFFICIAL_SERVER_SCHEMA, 'definitions'));
  const publish = at(OFFICIAL, 'paths', '/v0.1/publish', 'post');
  const serverResponse = officialSchemas.ServerResponse as Json;
  const official = at(serverResponse, 'properties', '_meta');
  const skillResponse: Json = {
    description: 'API response format with separated skill data and registry metadata (the shape of ServerResponse)',
    type: 'object',
    required: ['skill'],
    properties: { skill: ref('SkillDetail'), _meta: official },
  };
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: OFFICIAL.jsonSchemaDialect,
    info: {
      title: 'Gatehouse MCP registry API',
      version: `v0.1 (server.json ${OFFICIAL_SCHEMA_VERSION})`,
      summary: 'The official MCP registry API (v0.1), for each registry a Gatehouse registry server hosts',
      description:
        `The official MCP registry API (${(OFFICIAL.info as Json).version} OpenAPI) as Gatehouse serves it: every path is under \`/{registry}/v0.1/\`; ` +
        `server.json documents are validated against the official schema ${OFFICIAL_SCHEMA_VERSION} (${String(OFFICIAL_SERVER_SCHEMA.$id)}) when published or synced; skills are served like servers under \`skills\`. ` +
        'Deleted versions are kept as tombstones (`status: "deleted"`), listed with include_deleted and always by updated_since. ' +
        'The admin API (`/v1/sources`, `/v1/registries`, `/v1/me`) manages the sources and registries a server hosts; its bodies are the configuration file\'s `sources[]` and `registries[]` items. ' +
        'Authentication depends on the server: a bearer token in oauth mode, none in anonymous mode (then everything is open, and `/v1/me` is 401). Who may do what is decided by roles and claims (plugins/registry-authz/README.md). ' +
        'Every error is `{"error": "<code>", "error_description": "…"}`.',
      license: OFFICIAL.info === undefined ? undefined : (OFFICIAL.info as Json).license,
    },
    tags: [
      { name: 'servers', description: 'Discovering and retrieving MCP servers' },
      { name: 'skills', description: 'Discovering and retrieving skills' },
      { name: 'publish', description: 'Publishing and deleting versions in a registry\'s managed source' },
      { name: 'sources', description: 'Admin: the sources of entries (managed, file, git, api, cluster) and their syncs' },
      { name: 'registries', description: 'Admin: the registries a server hosts, each serving some sources' },
      { name: 'identity', description: 'Who the caller is' },
      { name: 'meta', description: 'This document and the protected resource metadata' },
      { name: 'operations', description: 'Probes and metrics' },
    ],
    security: [{ bearerAuth: [] }, {}],
    paths: {
      ...kindPaths('server'),
      ...kindPaths('skill'),
      '/{registry}/v0.1/publish': {
        post: {
          tags: ['publish'],
          summary: 'Publish an MCP server or skill version',
          description:
            'Publishes a version to the registry\'s managed source (needs the manageEntries role, the registry\'s claims and the managed source\'s). ' +
            `A server's stored document (the body without \`type\` and \`claims\`; a \`url\` without \`remotes\` also becomes a streamable-http remote) must validate against the official server.json schema ${OFFICIAL_SCHEMA_VERSION} and the official registry's rules (a package version is one version, not "latest" or a range): a 400 names each failing JSON path. ` +
            'A skill is published with `"type": "skill"`. `claims` (under full authorization, required) scope who sees the entry: a subset of the publisher\'s token claims, the same for every version. Versions are immutable: publishing an existing or deleted version is 409.',
          security: [{ bearerAuth: [] }, {}],
          requestBody: { required: true, content: { 'application/json': { schema: ref('PublishRequest'), examples: (at(publish, 'requestBody', 'content', 'application/json').examples as Json | undefined) ?? {} } } },
          responses: {
            '201': {
              description: 'The published version',
              headers: { Location: { description: 'The path of the published version', schema: { type: 'string' } } },
              content: json({ anyOf: [ref('ServerResponse'), ref('SkillResponse')] }),
            },
            ...errors([400, 401, 403, 404, 409, 413, 415]),
          },
        },
      },
      '/openapi.json': {
        get: {
          tags: ['meta'],
          summary: 'This document',
          security: [{}],
          responses: { '200': { description: 'The OpenAPI document of the registry API', content: json({ type: 'object' }) } },
        },
        options: openapiPreflight,
      },
      ...adminPaths(),
    },
    components: {
      securitySchemes: at(OFFICIAL, 'components', 'securitySchemes'),
      schemas: {
        ...serverSchemas,
        ServerResponse: serverResponse,
        ServerList: officialSchemas.ServerList,
        SkillDetail: {
          description:
            'A skill document, in ToolHive\'s skill shape (the registry file\'s `data.skills[]`; the official registry has no skill schema): `namespace` and `name` apart, whether the skill was published or synced. ' +
            'Gatehouse requires these and a version and keeps the other fields as they are. In paths and `search`, a skill is named "namespace/name".',
          type: 'object',
          required: ['namespace', 'name', 'version'],
          properties: {
            namespace: { type: 'string', description: 'Reverse-DNS namespace, e.g. "io.github.acme"' },
            name: { type: 'string', pattern: '^[^/]+$', description: 'The skill\'s name within its namespace, e.g. "pdf-report"' },
            version: { type: 'string', maxLength: 255 },
            description: { type: 'string' },
            title: { type: 'string' },
          },
        },
        SkillResponse: skillResponse,
        SkillList: {
          type: 'object',
          required: ['skills'],
          properties: { skills: { type: 'array', items: ref('SkillResponse') }, metadata: at(officialSchemas, 'ServerList', 'properties', 'metadata') },
        },
        ClaimMap: {
          description: 'Claims: claim name → the value a caller\'s token must hold (a flat map of strings)',
          type: 'object',
          additionalProperties: { type: 'string' },
        },
        PublishRequest: {
          description: 'A server.json (the default) or a skill (`"type": "skill"`), with the registry\'s publish fields',
          anyOf: [
            {
              allOf: [
                ref('ServerDetail'),
                {
                  type: 'object',
                  properties: {
                    type: { const: 'server', description: 'What is published (default "server")' },
                    claims: ref('ClaimMap'),
                    url: { type: 'string', format: 'uri', pattern: '^https?://', description: 'The server\'s URL: offered as its streamable-http remote when the document has no `remotes`' },
                  },
                },
              ],
            },
            {
              type: 'object',
              description: 'A skill, named `{namespace, name}` or `name: "namespace/name"`: stored and served as `{namespace, name}` either way',
              required: ['type', 'name', 'version', 'description'],
              properties: {
                type: { const: 'skill' },
                namespace: { type: 'string', description: 'Reverse-DNS namespace; without it, `name` is "namespace/name"' },
                name: { type: 'string', description: 'The name within `namespace`, or reverse-DNS "namespace/name"' },
                version: { type: 'string', maxLength: 255 },
                description: { type: 'string', minLength: 1 },
                title: { type: 'string' },
                claims: ref('ClaimMap'),
              },
            },
          ],
        },
        ...adminSchemas(),
        Error: {
          description: 'An error: a code and what is wrong, in words (some codes add fields: source_in_use names the `registries`)',
          type: 'object',
          required: ['error', 'error_description'],
          properties: { error: { type: 'string', example: 'invalid_request' }, error_description: { type: 'string', example: '/description: must NOT have more than 100 characters' } },
        },
      },
    },
  };
}

/** The document (built once). */
export const REGISTRY_OPENAPI: Readonly<Json> = buildDocument();
