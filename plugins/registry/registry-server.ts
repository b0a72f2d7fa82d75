/**
 * Composes a running registry server from its resolved config on the application lifecycle
 * (core/server/app.ts): the store (migrated, with the config's sources and registries applied), the
 * plugins (bearer auth in oauth mode, the registry-authz caller resolution, the registry API),
 * the first sync of the synced sources, then the HTTP server (without an MCP endpoint).
 */
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import {
  App,
  createLogger,
  GatewayMetrics,
  type GatewayServer,
  listenerOptions,
  type PluginSpec,
  StartupError,
} from '@gatehouse-mcp/gateway';
import type { RegistryConfig } from './config/registry-config.ts';
import { createTokenValidator } from '../incoming-auth/validator.ts';
import type { AuthzMode } from '../registry-authz/caller.ts';
import { registryAuthz } from '../registry-authz/authz-plugin.ts';
import { registryBearerAuth } from './auth/bearer-auth.ts';
import type { ValidatorFactory } from './auth/issuer-validators.ts';
import { registryApi } from './api-plugin.ts';
import { applyConfig } from './store/apply-config.ts';
import { openStore, type Store } from './store/store.ts';
import { reloadRegistry, type RegistryReloadOutcome } from './registry-reload.ts';
import { SyncScheduler } from './sync/scheduler.ts';
import { SyncMetrics } from './sync/sync-metrics.ts';
import { sourceReaders } from './sync/source-readers.ts';

export interface StartRegistryOptions {
  readonly config: RegistryConfig;
  readonly host?: string;
  readonly port?: number;
  readonly log?: Logger;
  readonly metrics?: GatewayMetrics;
  /** The bearer-token validator of each provider (default: incoming-auth's createTokenValidator). */
  readonly createValidator?: ValidatorFactory;
  /** Listen once everything has started (a worker of `server.workers`: App's `listenLast`). */
  readonly listenLast?: boolean;
}

export interface RunningRegistry {
  /** `http://host:port` of the bound address. */
  readonly url: string;
  readonly address: AddressInfo;
  readonly mode: AuthzMode;
  readonly store: Store;
  readonly server: GatewayServer;
  readonly sync: SyncScheduler;
  /** The configuration now served. */
  readonly config: RegistryConfig;
  /**
   * The routes its plugins serve (`:name` parameters), besides the server's own probes and
   * `/metrics`: what `GET /openapi.json` must describe (test/registry/openapi.test.ts).
   */
  readonly routes: readonly { readonly method: string; readonly path: string }[];
  /** Applies `next` (its sources, registries and Secrets; the rest needs a restart); never rejects. */
  reload(next: RegistryConfig): Promise<RegistryReloadOutcome>;
  stop(): Promise<void>;
}

export function authzModeOf(config: RegistryConfig): AuthzMode {
  if (config.auth.mode === 'anonymous') return 'anonymous';
  return config.auth.authz === null ? 'authOnly' : 'full';
}

export async function startRegistry(options: StartRegistryOptions): Promise<RunningRegistry> {
  const { config } = options;
  const mode = authzModeOf(config);
  const app = new App({ log: options.log ?? createLogger(), metrics: options.metrics ?? new GatewayMetrics(), listenLast: options.listenLast });
  const { log } = app;
  try {
    await app.observe(config, 'gatehouse-registry');
    const store = app.own(await openDatabase(config), (s) => s.close(), 'registry database');
    for (const warning of await applyConfig(store, config.sources, config.registries)) log.warn(warning);

    const specs: PluginSpec[] = [];
    if (config.auth.mode === 'oauth') {
      specs.push({ definition: registryBearerAuth as PluginSpec['definition'], config: { auth: config.auth, createValidator: options.createValidator ?? createTokenValidator }, source: `${config.file} auth.oauth` });
    }
    const roles = config.auth.mode === 'oauth' ? (config.auth.authz?.roles ?? {}) : {};
    specs.push({ definition: registryAuthz as PluginSpec['definition'], config: { mode, roles }, source: `${config.file} auth` });
    // Syncs start below, once the routes are in place; the admin API tells them of changes.
    // The readers resolve secrets through this context: a reload gives it the file's new Secrets.
    const readerContext: { settings: RegistryConfig['sync']; secrets: RegistryConfig['secrets']; log: Logger } = {
      settings: config.sync,
      secrets: config.secrets,
      log: log.child({ component: 'sync' }),
    };
    const sync = app.own(
      new SyncScheduler(store, {
        readers: sourceReaders(readerContext),
        log: log.child({ component: 'sync' }),
        metrics: new SyncMetrics(app.metrics.registry),
        maxConcurrent: config.sync.maxConcurrent,
      }),
      (s) => s.stop(),
      'source sync',
    );
    specs.push({ definition: registryApi as PluginSpec['definition'], config: { store, maxBodyBytes: config.server.maxBodyBytes, sync, syncSettings: config.sync }, source: `${config.file}` });
    const chain = await app.plugins(specs, { mcpPath: null, backends: [], configDir: config.dir });
    // A route may take several methods: one item per method.
    const routes = chain.routes.flatMap(({ method, path }) => (typeof method === 'string' ? [method] : method).map((one) => ({ method: one, path })));

    const server = app.serve({
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 8080,
      mcp: null,
      publicUrls: config.auth.mode === 'oauth' ? [config.auth.resourceUrl] : [],
      ...listenerOptions(config.server),
    });
    // The first sync of every synced source completes before the server listens: no client
    // ever sees a registry without its synced entries.
    await sync.start();

    const address = await app.start();
    const url = app.url();
    log.info({ url, mode, database: config.database.type, sources: config.sources.length, registries: config.registries.length }, 'registry server listening');
    let served = config;
    const reload = async (next: RegistryConfig): Promise<RegistryReloadOutcome> => {
      const outcome = await reloadRegistry({ store, sync, readerContext, log }, served, next).catch((error: unknown): RegistryReloadOutcome => {
        log.error({ err: error, file: next.file }, 'reload failed; the running configuration keeps serving');
        return { status: 'failed', error };
      });
      if (outcome.status === 'applied' || outcome.status === 'unchanged') served = next;
      return outcome;
    };
    return {
      url,
      address,
      mode,
      store,
      server,
      sync,
      get config() {
        return served;
      },
      routes,
      reload,
      stop: () => app.stop(),
    };
  } catch (err) {
    await app.stop();
    throw err;
  }
}

/** The store, migrated; a database that cannot be opened is a start-up problem, said in one line. */
async function openDatabase(config: RegistryConfig): Promise<Store> {
  try {
    return await openStore(config.database);
  } catch (err) {
    throw new StartupError(`cannot open the registry database: ${(err as Error).message}`, { cause: err });
  }
}
