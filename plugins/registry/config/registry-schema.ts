/**
 * The zod schemas of the registry server's configuration file (`gatehouse registry serve`): the
 * `auth`, `sources[]` and `registries[]` sections, plus `database` and `server`. Objects
 * are strict, so a typo is a problem. Cross-field rules (references between sections, the
 * operating mode) are checked here too, so that `validate` reports everything in one pass.
 *
 * The source and registry item schemas are also the bodies of the admin API's PUT requests.
 */
import { z } from 'zod';
import {
  addIssue,
  describeValue,
  didYouMean,
  durationSchema,
  httpUrlSchema,
  isMapping,
  issuerUrl,
  nonEmptyText as text,
  parseUrl,
  quoted as q,
  type RefinementCtx as Ctx,
  secretBodyShape,
  type SecretStore,
  serverSettingsSchema,
  telemetrySchema,
  severalWorkers,
  auditFileProblem,
  auditSchema,
  uniqueNames,
  whenMapping,
} from '@gatehouse-mcp/gateway';

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Names of sources and registries: they appear in URL paths. */
export const resourceNameSchema = z.string().superRefine((value, ctx) => {
  if (value.length > 63 || !NAME.test(value)) {
    ctx.addIssue(`must be lowercase letters, digits and "-", starting and ending with a letter or digit, at most 63 characters (got ${q(value)})`);
  }
});

/** A claims map: a flat map of claim names to string values. */
/** Claims are stored in database columns: no control characters (jsonb refuses a NUL). */
const noControl = (what: string) => (value: string, ctx: Ctx) => {
  if (/[\x00-\x1f\x7f]/.test(value)) ctx.addIssue(`${what} must not contain control characters (got ${describeValue(value)})`);
};

export const claimMapSchema = z
  .record(
    z.string().min(1, { error: 'claim names must not be empty' }).superRefine(noControl('claim names')),
    z.string({ error: (issue) => `must be a string (got ${describeValue(issue.input)}): claims are a flat map of claim names to string values` }).superRefine(noControl('claim values')),
    { error: (issue) => `must be a flat map of claim names to string values (got ${describeValue(issue.input)})` },
  )
  .transform((claims): Readonly<Record<string, string>> => claims);

/** A role's claim map: like claims, but never empty (an empty map would grant the role to every caller). */
const roleClaimMap = claimMapSchema.superRefine((claims, ctx) => {
  if (Object.keys(claims).length === 0) {
    ctx.addIssue('an empty claim map matches every caller: list at least one claim, e.g. {role: admin}');
  }
});

const httpUrl = httpUrlSchema('https://registry.example.com');

const GIT_URL = /^(https?|ssh|git|file):\/\/\S+$|^[\w.-]+@[\w.-]+:\S+$/;
const gitRepository = z.string().superRefine((value, ctx) => {
  if (!GIT_URL.test(value)) ctx.addIssue(`must be a git repository URL such as https://github.com/acme/registry.git (got ${q(value)})`);
});

// ---- auth ---------------------------------------------------------------------------------

const provider = z.strictObject({
  name: text,
  issuerUrl,
  audience: text,
  /** Let discovery and JWKS resolve to private addresses (an identity provider inside the network). */
  allowPrivateIP: z.boolean().default(false),
});

const roleMaps = z.array(roleClaimMap).min(1);

const authSchema = z
  .strictObject({
    mode: z.enum(['anonymous', 'oauth']),
    oauth: z
      .strictObject({
        resourceUrl: httpUrl,
        realm: text.optional(),
        providers: uniqueNames('provider', z.array(provider).min(1)),
      })
      .optional(),
    authz: z
      .strictObject({
        roles: z
          .strictObject({ superAdmin: roleMaps.optional(), manageSources: roleMaps.optional(), manageRegistries: roleMaps.optional(), manageEntries: roleMaps.optional() })
          .prefault({}),
      })
      .optional(),
  })
  .superRefine((auth, ctx) => {
    if (auth.mode === 'oauth' && auth.oauth === undefined) {
      addIssue(ctx, ['oauth'], 'is required when mode is oauth: set resourceUrl and at least one provider {name, issuerUrl, audience}');
    }
    if (auth.mode === 'anonymous' && auth.oauth !== undefined) addIssue(ctx, ['oauth'], 'must not be set when mode is anonymous', 'key');
    if (auth.mode === 'anonymous' && auth.authz !== undefined) {
      addIssue(ctx, ['authz'], 'needs mode oauth: OAuth authentication must be enabled before authorization is configured', 'key');
    }
    // A role map applies to the tokens of every provider unless it names one with `iss`: that
    // pair must then be an issuer the registry trusts, written as its tokens carry it.
    const issuers = auth.oauth?.providers.map((p) => p.issuerUrl) ?? [];
    for (const [role, maps] of Object.entries(auth.authz?.roles ?? {})) {
      maps?.forEach((map, i) => {
        if (map.iss !== undefined && !issuers.includes(map.iss)) {
          addIssue(ctx, ['authz', 'roles', role, i, 'iss'], `${q(map.iss)} is not the issuerUrl of a configured provider${didYouMean(map.iss, issuers)} (providers' issuers: ${issuers.join(', ') || 'none'})`);
        }
      });
    }
  }, whenMapping);

// ---- sources and registries ---------------------------------------------------------------

const SOURCE_KINDS = ['git', 'managed', 'file', 'api', 'cluster'] as const;

/**
 * `{name, key}` of a Secret document in the same file. Only the reference is kept with the
 * source (in the database too); the value is resolved from the file when the source syncs.
 */
const secretRef = z.strictObject({ name: text, key: text });

/** A URL that must not carry credentials: those belong in a Secret. */
const noUserInfo = (what: string) => (value: string, ctx: Ctx) => {
  const url = parseUrl(value);
  if (url !== null && (url.username !== '' || url.password !== '')) {
    ctx.addIssue(`must not carry a user name or password: put the credentials in a Secret and name it in ${what}`);
  }
};

const gitBlock = z.strictObject({
  repository: gitRepository.superRefine(noUserInfo('git.auth.passwordSecretRef')),
  branch: text.optional(),
  path: text,
  auth: z.strictObject({ username: text.optional(), passwordSecretRef: secretRef }).optional(),
});

const apiBlock = z.strictObject({
  url: httpUrl.superRefine(noUserInfo('api.tokenSecretRef')),
  tokenSecretRef: secretRef.optional(),
});

const clusterBlock = z
  .strictObject({
    manifests: z.array(text).min(1, { error: 'list at least one manifest file or directory' }).optional(),
    kubernetes: z.strictObject({ namespace: text.optional(), labelSelector: text.optional(), kubeconfig: text.optional() }).optional(),
  })
  .superRefine((cluster, ctx) => {
    if ((cluster.manifests === undefined) === (cluster.kubernetes === undefined)) {
      addIssue(ctx, [], 'needs exactly one of manifests (files or directories of MCPServer resources) or kubernetes {namespace, labelSelector, kubeconfig} (list and watch in a cluster)');
    }
  }, whenMapping);

const sourceFieldsShape = {
  format: z.enum(['upstream'], { error: (issue) => `only the upstream format (the official MCP registry's) is supported (got ${describeValue(issue.input)})` }).optional(),
  git: gitBlock.optional(),
  api: apiBlock.optional(),
  file: z.strictObject({ path: text }).optional(),
  cluster: clusterBlock.optional(),
  managed: z.strictObject({}).optional(),
  syncPolicy: z.strictObject({ interval: durationSchema() }).optional(),
  claims: claimMapSchema.optional(),
};

/** Exactly one kind; what only synced sources have is refused on managed ones. */
function sourceKindRules(source: unknown, ctx: Ctx): void {
  if (!isMapping(source)) return;
  const kinds = SOURCE_KINDS.filter((kind) => source[kind] !== undefined);
  if (kinds.length === 0) {
    addIssue(ctx, [], `needs exactly one of ${SOURCE_KINDS.join(', ')}: git {repository, branch, path}, api {url}, file {path}, cluster {manifests} or {kubernetes}, managed: {}`);
  }
  for (const extra of kinds.slice(1)) addIssue(ctx, [extra], `must not be set together with ${kinds[0]}: a source is exactly one of ${SOURCE_KINDS.join(', ')}`, 'key');
  if (kinds[0] === 'managed') {
    if (source.syncPolicy !== undefined) addIssue(ctx, ['syncPolicy'], 'must not be set on a managed source: it receives published entries and is not synced', 'key');
    if (source.format !== undefined) addIssue(ctx, ['format'], 'must not be set on a managed source: it holds published entries', 'key');
  }
  if ((kinds[0] === 'cluster' || kinds[0] === 'api') && source.format !== undefined) {
    addIssue(ctx, ['format'], `must not be set on ${kinds[0] === 'api' ? 'an api' : 'a cluster'} source: ${kinds[0] === 'api' ? 'it reads the official registry API' : 'it reads MCPServer resources'}`, 'key');
  }
}

const sourceSchema = z.strictObject({ name: resourceNameSchema, ...sourceFieldsShape }).superRefine(sourceKindRules, whenMapping);
/** The body of `PUT /v1/sources/{name}`: a source without (or with the same) name. */
export const sourceBodySchema = z.strictObject({ name: resourceNameSchema.optional(), ...sourceFieldsShape }).superRefine(sourceKindRules, whenMapping);

const registryFieldsShape = {
  sources: z.array(resourceNameSchema).superRefine((names, ctx) => {
    names.forEach((name, index) => {
      if (names.indexOf(name) !== index) addIssue(ctx, [index], `source ${q(name)} is listed twice`);
    });
  }),
  claims: claimMapSchema.optional(),
};
const registrySchema = z.strictObject({ name: resourceNameSchema, ...registryFieldsShape });
export const registryBodySchema = z.strictObject({ name: resourceNameSchema.optional(), ...registryFieldsShape });

// ---- database and server ------------------------------------------------------------------

const postgresUrl = z.string().superRefine((value, ctx) => {
  const url = parseUrl(value);
  if (url === null || (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:')) {
    ctx.addIssue(`must be a postgres://user:password@host:5432/database URL (got ${describeValue(value.replace(/\/\/[^@/]*@/, '//***@'))})`);
  }
});

export const DEFAULT_DATA_DIR = './data/registry';

const databaseSchema = z
  .strictObject({ type: z.enum(['embedded', 'postgres', 'memory']), path: text.optional(), url: postgresUrl.optional() })
  .superRefine((db, ctx) => {
    if (db.type === 'postgres' && db.url === undefined) addIssue(ctx, ['url'], 'is required when type is postgres');
    if (db.type !== 'postgres' && db.url !== undefined) addIssue(ctx, ['url'], `must not be set when type is ${db.type}`, 'key');
    if (db.type !== 'embedded' && db.path !== undefined) addIssue(ctx, ['path'], `must not be set when type is ${db.type} (it is the data directory of the embedded store)`, 'key');
  }, whenMapping);

// ---- the file -----------------------------------------------------------------------------

/**
 * `server.workers` above 1 runs several processes on one port (plugins/cli/workers/): they share
 * a PostgreSQL server as replicas do, but the embedded store is one process's files, and the
 * memory store one process's memory.
 */
function workersShareTheDatabase(file: unknown, ctx: Ctx): void {
  if (!isMapping(file) || !isMapping(file.server) || !severalWorkers(file.server.workers)) return;
  const audit = auditFileProblem(file.server.workers, file.audit);
  if (audit !== null) addIssue(ctx, ['audit', 'logFile'], audit);
  const type = isMapping(file.database) ? file.database.type : 'embedded';
  if (type === 'postgres') return;
  const workers = file.server.workers === 'auto' ? 'auto (a worker per core) needs' : `${String(file.server.workers)} workers need`;
  const why = type === 'memory' ? "the memory store is one process's memory" : "the embedded store's files can be opened by one process only";
  addIssue(ctx, ['server', 'workers'], `${workers} a database they share, but database.type is ${String(type)}: ${why}. Use database.type postgres, or workers: 1`);
}

/** References between sections: registries name existing sources, and at most one managed one. */
function crossReferences(file: unknown, ctx: Ctx): void {
  if (!isMapping(file) || !Array.isArray(file.registries)) return;
  const sources = Array.isArray(file.sources) ? file.sources.filter(isMapping) : [];
  const kinds = new Map<string, string>();
  for (const source of sources) {
    if (typeof source.name === 'string') kinds.set(source.name, SOURCE_KINDS.find((kind) => source[kind] !== undefined) ?? 'unknown');
  }
  file.registries.forEach((registry, r) => {
    if (!isMapping(registry) || !Array.isArray(registry.sources)) return;
    const managed: string[] = [];
    registry.sources.forEach((name, s) => {
      if (typeof name !== 'string') return;
      if (!kinds.has(name)) {
        const known = kinds.size === 0 ? 'no sources are defined' : `sources: ${[...kinds.keys()].join(', ')}`;
        addIssue(ctx, ['registries', r, 'sources', s], `source ${q(name)} not found${didYouMean(name, kinds.keys())} (${known})`);
      } else if (kinds.get(name) === 'managed') {
        managed.push(name);
        if (managed.length === 2) {
          addIssue(ctx, ['registries', r, 'sources', s], `a registry lists at most one managed source (publishing writes into it), and ${q(managed[0]!)} is managed too`);
        }
      }
    });
  });
}

/** How syncs run: shared by every synced source. */
const syncSchema = z.strictObject({
  /** Sources created through the admin API may reach private addresses (git and api sources). */
  allowPrivateAddresses: z.boolean().default(false),
  /** The directory file sources created through the admin API must be in (none: refused). */
  fileRoot: text.optional(),
  /** Syncs running at once, across all sources (a slow source does not hold up the others beyond this). */
  maxConcurrent: z.number().int().min(1).max(64).default(4),
});

/** Every secretRef of the sources names a Secret document of the file, and a key it has. */
function secretReferences(secrets: SecretStore) {
  return (file: unknown, ctx: Ctx): void => {
    if (!isMapping(file) || !Array.isArray(file.sources)) return;
    file.sources.forEach((source, i) => {
      if (!isMapping(source)) return;
      const refs: [readonly (string | number)[], unknown][] = [
        [['git', 'auth', 'passwordSecretRef'], isMapping(source.git) && isMapping(source.git.auth) ? source.git.auth.passwordSecretRef : undefined],
        [['api', 'tokenSecretRef'], isMapping(source.api) ? source.api.tokenSecretRef : undefined],
      ];
      for (const [path, ref] of refs) {
        if (!isMapping(ref) || typeof ref.name !== 'string' || typeof ref.key !== 'string') continue;
        const lookup = secrets.resolve({ name: ref.name, key: ref.key });
        if (!lookup.found && lookup.problem !== null) addIssue(ctx, ['sources', i, ...path], lookup.problem);
      }
    });
  };
}

export function registryFileSchema(secrets: SecretStore) {
  return z
    .strictObject({
      auth: authSchema,
      sources: uniqueNames('source', z.array(sourceSchema)).default([]),
      registries: uniqueNames('registry', z.array(registrySchema)).default([]),
      database: databaseSchema.prefault({ type: 'embedded' }),
      server: serverSettingsSchema(1024 * 1024),
      sync: syncSchema.prefault({}),
      telemetry: telemetrySchema.optional(),
      audit: auditSchema.optional(),
    })
    .superRefine(crossReferences, whenMapping)
    .superRefine(secretReferences(secrets), whenMapping)
    .superRefine(workersShareTheDatabase, whenMapping);
}

/** A `kind: Secret` document beside the registry's configuration (Kubernetes' shape). */
export const secretDocumentSchema = z.strictObject({
  apiVersion: z.literal('v1', { error: (issue) => `must be v1 (got ${describeValue(issue.input)})` }),
  kind: z.literal('Secret'),
  metadata: z.strictObject({ name: resourceNameSchema, namespace: text.optional(), labels: z.record(z.string(), z.string()).optional(), annotations: z.record(z.string(), z.string()).optional() }),
  ...secretBodyShape,
});

export type RegistryFileInput = z.output<ReturnType<typeof registryFileSchema>>;
export type SourceInput = z.output<typeof sourceSchema>;
