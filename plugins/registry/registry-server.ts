/**
 * Composes a running registry server from its resolved config: the store (migrated, with the
 * config's sources and registries applied), the plugins (bearer auth in oauth mode, the
 * registry-authz caller resolution, the registry API), the first sync of the synced sources,
 * and the HTTP server (without an MCP endpoint).
 */
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { Chain } from '../../core/chain.ts';
import type { RegistryConfig } from './config/registry-config.ts';
import { formatPath } from '../../core/config/problems.ts';
import { OpenStreams } from '../../core/mcp/streams.ts';
import { createLogger } from '../../core/observe/log.ts';
import { GatewayMetrics } from '../../core/observe/metrics.ts';
import { createPlugins, type PluginSpec } from '../../core/plugin-loader.ts';
import type { AuthChallenge } from '../../core/errors.ts';
import type { Plugin, PluginHost } from '../../core/plugin.ts';
import { GatewayServer } from '../../core/gateway-server.ts';
import { NotAvailableError } from '../../core/virtual-mcp-server.ts';
import { createTokenValidator } from '../incoming-auth/validator.ts';
import type { AuthzMode } from '../registry-authz/caller.ts';
import { registryAuthz } from '../registry-authz/authz-plugin.ts';
import { registryBearerAuth } from './auth/bearer-auth.ts';
import type { ValidatorFactory } from './auth/issuer-validators.ts';
import { registryApi } from './api-plugin.ts';
import { applyConfig } from './store/apply-config.ts';
import { openStore, type Store } from './store/store.ts';
import { SyncScheduler } from './sync/scheduler.ts';

export interface StartRegistryOptions {
  readonly config: RegistryConfig;
  readonly host?: string;
  readonly port?: number;
  readonly log?: Logger;
  readonly metrics?: GatewayMetrics;
  /** The bearer-token validator of each provider (default: incoming-auth's createTokenValidator). */
  readonly createValidator?: ValidatorFactory;
}

export interface RunningRegistry {
  /** `http://host:port` of the bound address. */
  readonly url: string;
  readonly address: AddressInfo;
  readonly mode: AuthzMode;
  readonly store: Store;
  readonly server: GatewayServer;
  readonly sync: SyncScheduler;
  stop(): Promise<void>;
}

export function authzModeOf(config: RegistryConfig): AuthzMode {
  if (config.auth.mode === 'anonymous') return 'anonymous';
  return config.auth.authz === null ? 'authOnly' : 'full';
}

/** Parts of a valid config this version cannot serve yet, each with its YAML path. */
export function unavailableParts(config: RegistryConfig): string[] {
  return config.sources.flatMap((source, i) =>
    source.kind === 'git' ? [`${config.file} ${formatPath(['sources', i, 'git'])}: git sources are not available in this version yet (source "${source.name}"; file and managed sources are)`] : [],
  );
}

export async function startRegistry(options: StartRegistryOptions): Promise<RunningRegistry> {
  const { config } = options;
  const log = options.log ?? createLogger();
  const metrics = options.metrics ?? new GatewayMetrics();
  const missing = unavailableParts(config);
  if (missing.length > 0) throw new NotAvailableError(missing);
  const mode = authzModeOf(config);

  const store = await openStore(config.database);
  try {
    for (const warning of await applyConfig(store, config.sources, config.registries)) log.warn(warning);
  } catch (err) {
    await store.close();
    throw err;
  }

  const specs: PluginSpec[] = [];
  if (config.auth.mode === 'oauth') {
    specs.push({ definition: registryBearerAuth as PluginSpec['definition'], config: { auth: config.auth, createValidator: options.createValidator ?? createTokenValidator }, source: `${config.file} auth.oauth` });
  }
  const roles = config.auth.mode === 'oauth' ? (config.auth.authz?.roles ?? {}) : {};
  specs.push({ definition: registryAuthz as PluginSpec['definition'], config: { mode, roles }, source: `${config.file} auth` });
  specs.push({ definition: registryApi as PluginSpec['definition'], config: { store, maxBodyBytes: config.server.maxBodyBytes }, source: `${config.file}` });

  let server: GatewayServer | null = null;
  let challenge: AuthChallenge | null = null;
  const hostFor = (name: string): PluginHost => ({
    log: log.child({ plugin: name }),
    metrics: metrics.registry,
    mcpPath: null,
    backends: [],
    configDir: config.dir,
    setAuthChallenge(value) {
      challenge = value;
      server?.setAuthChallenge(value);
    },
  });
  let plugins: Plugin[];
  try {
    plugins = await createPlugins(specs, hostFor);
  } catch (err) {
    await store.close();
    throw err;
  }

  const chain = new Chain(plugins, metrics.phaseTimer);
  server = new GatewayServer({
    host: options.host ?? '127.0.0.1',
    port: options.port ?? 8080,
    log,
    metrics,
    chain,
    mcp: null,
    streams: new OpenStreams(metrics),
    publicUrls: config.auth.mode === 'oauth' ? [config.auth.resourceUrl] : [],
    allowedHosts: config.server.allowedHosts,
    allowedOrigins: config.server.allowedOrigins,
    shutdownGraceMs: config.server.shutdownGraceMs,
    requestTimeoutMs: config.server.requestTimeoutMs,
    admin: config.server.admin,
    accessLog: config.server.accessLog,
  });
  if (challenge !== null) server.setAuthChallenge(challenge);

  const sync = new SyncScheduler(store, config.sources, log.child({ component: 'sync' }));
  const started: Plugin[] = [];
  let address: AddressInfo;
  try {
    await sync.start();
    address = await server.listen();
    for (const plugin of plugins) {
      await plugin.start?.();
      started.push(plugin);
    }
  } catch (err) {
    await sync.stop();
    await server.close();
    for (const plugin of started.reverse()) await plugin.stop?.();
    await store.close();
    throw err;
  }
  server.markReady();
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  log.info({ url, mode, database: config.database.type, sources: config.sources.length, registries: config.registries.length }, 'registry server listening');

  const running = server;
  let stopping: Promise<void> | null = null;
  return {
    url,
    address,
    mode,
    store,
    server: running,
    sync,
    stop() {
      stopping ??= (async () => {
        await running.close();
        await sync.stop();
        for (const plugin of started.reverse()) {
          try {
            await plugin.stop?.();
          } catch (err) {
            log.error({ err, plugin: plugin.name }, 'plugin failed to stop');
          }
        }
        await store.close();
      })();
      return stopping;
    },
  };
}
