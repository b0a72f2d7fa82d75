/**
 * The registry server's config loader: one YAML document in (the `auth`, `sources[]`,
 * `registries[]`, plus `database` and `server`), the resolved `RegistryConfig` out, or every
 * problem of the file at once, each as `file:line:col path: message`.
 */
import { dirname, isAbsolute, resolve } from 'node:path';
import {
  type ConfigProblem,
  formatPath,
  isMapping,
  loadFile,
  parseYamlDocuments,
  schemaIssueMessage,
  issueReports,
  SecretStore,
  type ServerSettings,
  sortProblems,
  type TelemetrySettings,
  toTelemetrySettings,
  toAuditSettings,
  type AuditSettings,
  validateFile,
  type Validation,
  type YamlDocument,
} from '@gatehouse-mcp/gateway';
import { DEFAULT_DATA_DIR, registryFileSchema, secretDocumentSchema } from './registry-schema.ts';
import type { RegistryFileInput, SourceInput } from './registry-schema.ts';
import type { z } from 'zod';
import type { ClaimMap } from '../../registry-authz/claims.ts';
import type { RoleRules } from '../../registry-authz/roles.ts';

/** Default `syncPolicy.interval` of a synced source that does not set one. */
const DEFAULT_SYNC_INTERVAL_MS = 5 * 60_000;

export interface OAuthProviderConfig {
  readonly name: string;
  readonly issuerUrl: string;
  readonly audience: string;
  readonly allowPrivateIp: boolean;
}

export type RegistryAuthConfig =
  | { readonly mode: 'anonymous' }
  | {
      readonly mode: 'oauth';
      readonly resourceUrl: string;
      /** `realm` of the WWW-Authenticate challenge (default: the resourceUrl). */
      readonly realm: string;
      readonly providers: readonly OAuthProviderConfig[];
      /** Null: auth-only mode. */
      readonly authz: { readonly roles: RoleRules } | null;
    };

export type SourceKind = 'managed' | 'file' | 'git' | 'api' | 'cluster';

/** `{name, key}` of a Secret document of the config file (the value is never stored). */
export interface SecretRef {
  readonly name: string;
  readonly key: string;
}

export interface GitSettings {
  readonly repository: string;
  /** Null: the remote's default branch. */
  readonly branch: string | null;
  readonly path: string;
  readonly auth: { readonly username: string | null; readonly passwordSecretRef: SecretRef } | null;
}

export interface ApiSettings {
  /** Base URL of the peer registry: the source reads `<url>/v0.1/servers`. */
  readonly url: string;
  readonly tokenSecretRef: SecretRef | null;
}

export type ClusterSettings =
  /** Absolute paths of manifest files or directories (standalone). */
  | { readonly manifests: readonly string[] }
  /** List and watch in a cluster (in-cluster config, or a kubeconfig file). */
  | { readonly kubernetes: { readonly namespace: string | null; readonly labelSelector: string | null; readonly kubeconfig: string | null } };

/** How syncs run (the `sync` section). */
export interface SyncSettings {
  readonly allowPrivateAddresses: boolean;
  /** Absolute directory API-created file sources must be in; null: the API cannot create them. */
  readonly fileRoot: string | null;
  readonly maxConcurrent: number;
}

/** A source as the store keeps it (from the config file or the admin API). */
export interface SourceDefinition {
  readonly name: string;
  readonly kind: SourceKind;
  readonly format: 'upstream' | null;
  /** Absolute path of the file of a file source. */
  readonly file: { readonly path: string } | null;
  readonly git: GitSettings | null;
  readonly api: ApiSettings | null;
  readonly cluster: ClusterSettings | null;
  /** Sync interval of a synced source (null for managed sources). */
  readonly syncIntervalMs: number | null;
  readonly claims: ClaimMap;
}

export interface RegistryDefinition {
  readonly name: string;
  /** Source names, in priority order. */
  readonly sources: readonly string[];
  readonly claims: ClaimMap;
}

export type DatabaseConfig = { readonly type: 'embedded'; readonly path: string } | { readonly type: 'postgres'; readonly url: string } | { readonly type: 'memory' };

export interface RegistryConfig {
  /** Absolute path of the file and its directory. */
  readonly file: string;
  readonly dir: string;
  readonly auth: RegistryAuthConfig;
  readonly sources: readonly SourceDefinition[];
  readonly registries: readonly RegistryDefinition[];
  readonly database: DatabaseConfig;
  readonly server: ServerSettings;
  readonly sync: SyncSettings;
  /** `telemetry`: OpenTelemetry traces and OTLP metrics of the registry's requests (off unless enabled). */
  readonly telemetry: TelemetrySettings;
  /** `audit`: the audit trail of the registry's changes and refusals (off unless enabled). */
  readonly audit: AuditSettings;
  /** The Secret documents of the file: what sources' secretRefs resolve against. */
  readonly secrets: SecretStore;
}

export type RegistryValidation = Validation<RegistryConfig>;

/** The resolved config of `file`, or a `ConfigError` listing every problem in it. */
export const loadRegistryConfig = (file: string): Promise<RegistryConfig> => loadFile(file, validateRegistryText);

/** For `gatehouse registry validate`: the resolved config, or every problem (sorted by position). */
export const validateRegistryFile = (file: string): Promise<RegistryValidation> => validateFile(file, validateRegistryText);

export function validateRegistryText(text: string, file: string): RegistryValidation {
  const problems: ConfigProblem[] = [];
  const whole = (message: string): void => void problems.push({ file, line: 0, column: 0, resource: '', path: '', message });
  const yaml = parseYamlDocuments(text);
  for (const error of yaml.errors) {
    problems.push({ file, line: error.position.line, column: error.position.column, resource: '', path: '', message: `YAML syntax error: ${error.message}` });
  }
  // The registry's configuration is one document; Secret documents beside it hold credentials.
  const isSecret = (doc: YamlDocument): boolean => isMapping(doc.value) && doc.value.kind === 'Secret';
  const secrets = new SecretStore();
  for (const doc of yaml.documents.filter(isSecret)) {
    const result = secretDocumentSchema.safeParse(doc.value, { error: schemaIssueMessage });
    if (!result.success) {
      const name = isMapping(doc.value) && isMapping(doc.value.metadata) && typeof doc.value.metadata.name === 'string' ? doc.value.metadata.name : '?';
      reportIssues(problems, file, doc, result.error.issues, `Secret/${name}`);
    } else {
      secrets.add(result.data.metadata.name, doc.value as Record<string, unknown>);
    }
  }
  const [document, ...others] = yaml.documents.filter((doc) => !isSecret(doc));
  for (const extra of others) {
    const { line, column } = extra.locate([]);
    problems.push({ file, line, column, resource: '', path: '', message: 'a registry configuration is one YAML document (plus kind: Secret documents): remove the extra document' });
  }
  if (document === undefined) {
    if (yaml.errors.length === 0) whole('the file is empty: it needs at least an auth section (auth: {mode: anonymous} or auth: {mode: oauth, ...})');
    return { ok: false, problems: sortProblems(problems) };
  }
  if (document.broken) return { ok: false, problems: sortProblems(problems) };

  const result = registryFileSchema(secrets).safeParse(document.value, { error: schemaIssueMessage });
  if (!result.success) reportIssues(problems, file, document, result.error.issues, '');
  if (problems.length > 0) return { ok: false, problems: sortProblems(problems) };
  if (!result.success) return { ok: false, problems };
  return { ok: true, config: assemble(result.data, resolve(file), secrets) };
}

function reportIssues(problems: ConfigProblem[], file: string, document: YamlDocument, issues: readonly z.core.$ZodIssue[], resource: string): void {
  for (const issue of issues) {
    for (const { path, message, target, locatePath } of issueReports(issue)) {
      const { line, column } = document.locate(locatePath, target);
      problems.push({ file, line, column, resource, path: formatPath(path), message });
    }
  }
}

function assemble(input: RegistryFileInput, file: string, secrets: SecretStore): RegistryConfig {
  const dir = dirname(file);
  return {
    file,
    dir,
    auth: toAuth(input.auth),
    sources: input.sources.map((source) => toSourceDefinition(source, source.name, dir)),
    registries: input.registries.map((registry) => ({ name: registry.name, sources: registry.sources, claims: registry.claims ?? {} })),
    database: toDatabase(input.database, dir),
    server: input.server,
    telemetry: toTelemetrySettings(input.telemetry),
    audit: toAuditSettings(input.audit, dir),
    sync: {
      allowPrivateAddresses: input.sync.allowPrivateAddresses,
      fileRoot: input.sync.fileRoot === undefined ? null : resolve(dir, input.sync.fileRoot),
      maxConcurrent: input.sync.maxConcurrent,
    },
    secrets,
  };
}

function toAuth(auth: RegistryFileInput['auth']): RegistryAuthConfig {
  if (auth.mode === 'anonymous' || auth.oauth === undefined) return { mode: 'anonymous' };
  const { oauth } = auth;
  return {
    mode: 'oauth',
    resourceUrl: oauth.resourceUrl,
    realm: oauth.realm ?? oauth.resourceUrl,
    providers: oauth.providers.map((p) => ({ name: p.name, issuerUrl: p.issuerUrl, audience: p.audience, allowPrivateIp: p.allowPrivateIP })),
    authz: auth.authz === undefined ? null : { roles: auth.authz.roles },
  };
}

function toDatabase(db: RegistryFileInput['database'], dir: string): DatabaseConfig {
  if (db.type === 'memory') return { type: 'memory' };
  if (db.type === 'postgres') return { type: 'postgres', url: db.url ?? '' };
  return { type: 'embedded', path: resolve(dir, db.path ?? DEFAULT_DATA_DIR) };
}

type SourceFields = Omit<SourceInput, 'name'>;

/** A validated source item (config or API body) as a definition; relative paths resolve against `dir`. */
export function toSourceDefinition(source: SourceFields, name: string, dir: string): SourceDefinition {
  const kind: SourceKind = source.managed !== undefined ? 'managed' : source.file !== undefined ? 'file' : source.api !== undefined ? 'api' : source.cluster !== undefined ? 'cluster' : 'git';
  const synced = kind !== 'managed';
  const path = (p: string): string => (isAbsolute(p) ? p : resolve(dir, p));
  const { git, api, cluster } = source;
  return {
    name,
    kind,
    format: kind === 'file' || kind === 'git' ? (source.format ?? 'upstream') : null,
    file: source.file === undefined ? null : { path: path(source.file.path) },
    git:
      git === undefined
        ? null
        : { repository: git.repository, branch: git.branch ?? null, path: git.path, auth: git.auth === undefined ? null : { username: git.auth.username ?? null, passwordSecretRef: git.auth.passwordSecretRef } },
    api: api === undefined ? null : { url: api.url.replace(/\/+$/, ''), tokenSecretRef: api.tokenSecretRef ?? null },
    cluster:
      cluster === undefined
        ? null
        : cluster.manifests !== undefined
          ? { manifests: cluster.manifests.map(path) }
          : {
              kubernetes: {
                namespace: cluster.kubernetes?.namespace ?? null,
                labelSelector: cluster.kubernetes?.labelSelector ?? null,
                kubeconfig: cluster.kubernetes?.kubeconfig === undefined ? null : path(cluster.kubernetes.kubeconfig),
              },
            },
    syncIntervalMs: synced ? (source.syncPolicy?.interval ?? DEFAULT_SYNC_INTERVAL_MS) : null,
    claims: source.claims ?? {},
  };
}

/** `30m`, `1h30m`, `45s`: a duration in the form the config uses. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  let rest = ms;
  let out = '';
  for (const [unit, size] of [['h', 3_600_000], ['m', 60_000], ['s', 1000], ['ms', 1]] as const) {
    const amount = Math.floor(rest / size);
    if (amount > 0) out += `${amount}${unit}`;
    rest -= amount * size;
  }
  return out;
}
