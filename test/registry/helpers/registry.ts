/**
 * Starts a registry server in the test process from YAML text (through the real config loader),
 * on 127.0.0.1 and a free port, and talks to it over real sockets.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadRegistryConfig } from '../../../plugins/registry/config/registry-config.ts';
import { createLogger } from '../../../core/observe/log.ts';
import { GatewayMetrics } from '../../../core/observe/metrics.ts';
import { startRegistry, type RunningRegistry } from '../../../plugins/registry/registry-server.ts';

export interface Response {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The parsed body as `T` (undefined when it is not JSON). */
  json<T = Body>(): T;
}

/** Loose view of a JSON body for assertions. */
export interface Body {
  readonly error?: string;
  readonly error_description?: string;
  readonly [field: string]: unknown;
}

export interface VersionBody {
  readonly server?: { readonly name: string; readonly version: string; readonly [field: string]: unknown };
  readonly skill?: { readonly name: string; readonly version: string; readonly [field: string]: unknown };
  readonly _meta: { readonly 'io.modelcontextprotocol.registry/official': { readonly isLatest: boolean; readonly status: string; readonly updatedAt: string; readonly publishedAt: string } };
}

export interface ListBody {
  readonly servers?: readonly VersionBody[];
  readonly skills?: readonly VersionBody[];
  readonly metadata: { readonly count: number; readonly nextCursor?: string };
}

export interface EntriesBody {
  readonly entries: readonly { readonly type: string; readonly name: string; readonly source?: string; readonly claims: Record<string, string>; readonly versions: readonly { readonly version: string; readonly isLatest: boolean }[] }[];
  readonly metadata: { readonly count: number; readonly nextCursor?: string };
}

/** Names (`name@version`) of a list body's items. */
export function namesOf(body: ListBody): string[] {
  return (body.servers ?? body.skills ?? []).map((item) => {
    const doc = item.server ?? item.skill!;
    return `${doc.name}@${doc.version}`;
  });
}

export interface TestRegistry extends RunningRegistry {
  readonly dir: string;
  request(method: string, path: string, options?: { token?: string; body?: unknown; raw?: string | Buffer; headers?: Record<string, string> }): Promise<Response>;
}

export async function tempDir(prefix = 'gatehouse-registry-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/** `yaml` may use `{{dir}}` for the temporary directory the config file is written to. */
export async function startTestRegistry(yaml: string, dir?: string): Promise<TestRegistry> {
  const where = dir ?? (await tempDir());
  const file = join(where, 'registry.yaml');
  await writeFile(file, yaml.replaceAll('{{dir}}', where));
  const config = await loadRegistryConfig(file);
  const level = (process.env.GATEHOUSE_TEST_LOG as 'debug' | undefined) ?? 'silent';
  const running = await startRegistry({ config, port: 0, log: createLogger(level), metrics: new GatewayMetrics({ processMetrics: false }) });
  return Object.assign(running, {
    dir: where,
    async request(method: string, path: string, options: { token?: string; body?: unknown; raw?: string | Buffer; headers?: Record<string, string> } = {}): Promise<Response> {
      const headers: Record<string, string> = { ...options.headers };
      if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
      let body: string | Buffer | undefined = options.raw;
      if (options.body !== undefined) {
        body = JSON.stringify(options.body);
        headers['content-type'] ??= 'application/json';
      }
      const response = await fetch(running.url + path, { method, headers, ...(body === undefined ? {} : { body }) });
      const text = await response.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: response.status, headers: response.headers, text, json: <T>() => json as T };
    },
  });
}

/**
 * The `auth` section in oauth mode with several providers (`{name, issuer, audience}`), then
 * `authz` (YAML indented for `auth:`, empty for auth-only) and `rest` (the other sections).
 */
export function providersYaml(providers: readonly { name: string; issuer: string; audience?: string }[], authz = '', rest = 'database: {type: memory}\n'): string {
  const lines = providers.map((p) => `      - {name: ${p.name}, issuerUrl: "${p.issuer}", audience: ${p.audience ?? 'registry'}}`);
  return `auth:\n  mode: oauth\n  oauth:\n    resourceUrl: http://127.0.0.1/\n    providers:\n${lines.join('\n')}\n${authz === '' ? '' : authz.replace(/\n?$/, '\n')}${rest}`;
}

/** The `auth` section of a config in oauth mode for one issuer (no authz block: auth-only). */
export function oauthYaml(issuer: string, audience = 'registry', authz = ''): string {
  return `auth:
  mode: oauth
  oauth:
    resourceUrl: http://127.0.0.1/registry
    providers:
      - {name: test, issuerUrl: "${issuer}", audience: ${audience}}
${authz}`;
}
