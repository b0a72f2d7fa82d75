/**
 * Composes a running virtual MCP server from its resolved config on the application lifecycle
 * (app.ts): the session storage and the HTTP server, which live as long as the process, and a
 * generation (reload/generation.ts: plugins and chain, connection pools, the MCP endpoint —
 * transparent for one backend, aggregated for a group) that a reload replaces whole. The
 * composition root (the CLI, or a user's own code) decides which plugins run; this file knows no
 * identity provider.
 *
 * Reload (`RunningVmcp.reload`): the new configuration's generation is built and started beside
 * the serving one, with the same session storage; the server then routes new requests to it
 * (GatewayServer.swap), the old generation's standalone streams are ended (clients reopen them,
 * on the new one), and it is closed once its requests are done (or the shutdown grace period is
 * over). What needs a restart is in reload/diff.ts; such a reload is refused as a whole.
 */
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { BackendInfo } from './backend.ts';
import { App } from './app.ts';
import type { VmcpConfig } from './config/vmcp-types.ts';
import { createSessionStorage } from './mcp/aggregate/compose.ts';
import { createSessionOwners } from './mcp/redis-session-owners.ts';
import { createLogger } from './observe/log.ts';
import { GatewayMetrics } from './observe/metrics.ts';
import type { PluginSpec } from './plugin-loader.ts';
import { listenerOptions, type GatewayServer, type ShutdownHook } from './gateway-server.ts';
import { httpUrlOf } from './http/address.ts';
import type { UpstreamOptions } from './upstream/upstreams.ts';
import { Generation, publicUrlsOf } from './reload/generation.ts';
import { changesOf, nothingChanged, restartNeeded, type Changes, type RestartNeeded } from './reload/diff.ts';

export interface StartVmcpOptions {
  config: VmcpConfig;
  host?: string;
  port?: number;
  log?: Logger;
  /** Plugins the composition root chose for this config (incoming auth first). */
  builtins?: readonly PluginSpec[];
  /** Plugins given in code; they run after those of the config file. */
  plugins?: readonly PluginSpec[];
  metrics?: GatewayMetrics;
  /** Limits of the connections to each backend (defaults in upstream/upstreams.ts). */
  upstreams?: Partial<UpstreamOptions>;
}

export type ReloadOutcome =
  | { readonly status: 'applied'; readonly changes: Changes }
  | { readonly status: 'unchanged' }
  | { readonly status: 'restart-needed'; readonly parts: readonly RestartNeeded[] }
  | { readonly status: 'failed'; readonly error: unknown };

export interface RunningVmcp {
  /** URL of the MCP endpoint on the bound address (of the configuration it started with). */
  readonly url: string;
  readonly address: AddressInfo;
  readonly server: GatewayServer;
  /** The backends of the configuration now served. */
  readonly backends: readonly BackendInfo[];
  /** The configuration now served. */
  readonly config: VmcpConfig;
  /**
   * Applies `config` to the running server (`builtins`: the plugins the composition root chose
   * for it). Reloads run one at a time; it never rejects: the outcome says what happened, and
   * has been logged.
   */
  reload(config: VmcpConfig, builtins?: readonly PluginSpec[]): Promise<ReloadOutcome>;
  stop(): Promise<void>;
}

export async function startVmcp(options: StartVmcpOptions): Promise<RunningVmcp> {
  const { config } = options;
  const app = new App({ log: options.log ?? createLogger(), metrics: options.metrics ?? new GatewayMetrics() });
  const { log, metrics } = app;
  try {
    const storage = app.own(await createSessionStorage(config, log), (s) => s.close(), 'session storage');
    const owners = app.own(await createSessionOwners(config, log), (o) => o.close(), 'transparent session owners').owners;
    /** Generations not closed yet: the serving one, and those draining. */
    const live = new Set<Generation>();
    let current: Generation | null = null;
    let server: GatewayServer | null = null;
    const onChallenge = (generation: Generation, challenge: Parameters<GatewayServer['setAuthChallenge']>[0]): void => {
      if (generation === current) server?.setAuthChallenge(challenge);
    };
    const build = async (next: VmcpConfig, builtins: readonly PluginSpec[]): Promise<Generation> => {
      const generation = await Generation.build({ config: next, log, metrics, storage, owners, builtins, plugins: options.plugins ?? [], upstreams: options.upstreams, onChallenge, previous: current });
      live.add(generation);
      return generation;
    };
    const close = async (generation: Generation): Promise<void> => {
      await generation.close();
      live.delete(generation);
    };

    const first = await build(config, options.builtins ?? []);
    current = first;
    app.own(live, async (all) => {
      for (const generation of [...all]) await close(generation);
    }, 'MCP endpoint, plugins and backend connections');
    // The server tells every live generation's streams at shutdown, draining ones included.
    const streams: ShutdownHook = {
      drain: () => live.forEach((g) => g.streams.drain()),
      abort: () => live.forEach((g) => g.streams.abort()),
    };
    server = app.serve({
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 4483,
      mcp: first.endpoint,
      chain: first.chain,
      shutdown: [streams],
      publicUrls: publicUrlsOf(config),
      ...listenerOptions(config.server),
    });
    if (first.challenge !== null) server.setAuthChallenge(first.challenge);
    app.onStart(async () => {
      await first.start();
      first.activate();
    });

    const address = await app.start();
    const url = app.url(first.mcpPath);
    const admin = server.adminAddress;
    log.info(
      {
        url,
        mode: first.transparent ? 'transparent' : 'aggregated',
        backends: first.backends.map((b) => `${b.name}=${b.url.href}`),
        ...(admin === null ? {} : { admin: httpUrlOf(admin) }),
      },
      'virtual MCP server listening',
    );

    const theServer = server;
    let stopped = false;
    let queue: Promise<unknown> = Promise.resolve();
    const apply = async (next: VmcpConfig, builtins: readonly PluginSpec[]): Promise<ReloadOutcome> => {
      const old = current!;
      if (stopped) return { status: 'failed', error: new Error('the server is stopping') };
      const parts = restartNeeded(old.config, next);
      if (parts.length > 0) {
        for (const part of parts) log.error({ path: part.path, reason: part.reason }, `reload refused: ${part.path} needs a restart (${part.reason})`);
        log.error({ file: next.file, needsRestart: parts.map((p) => p.path) }, 'reload refused: nothing was applied, the running configuration keeps serving');
        return { status: 'restart-needed', parts };
      }
      const changes = changesOf(old.config, next);
      if (nothingChanged(changes)) {
        log.info({ file: next.file }, 'reload: the configuration is unchanged, nothing to apply');
        return { status: 'unchanged' };
      }
      let generation: Generation;
      try {
        generation = await build(next, builtins);
      } catch (err) {
        log.error({ err, file: next.file }, 'reload refused: the new configuration could not be built; the running one keeps serving');
        return { status: 'failed', error: err };
      }
      try {
        await generation.start();
      } catch (err) {
        log.error({ err, file: next.file }, 'reload refused: a plugin of the new configuration failed to start; the running one keeps serving');
        await close(generation);
        return { status: 'failed', error: err };
      }
      if (stopped) {
        await close(generation);
        return { status: 'failed', error: new Error('the server is stopping') };
      }
      if (generation.transparent !== old.transparent) {
        log.warn({ from: old.transparent ? 'transparent' : 'aggregated', to: generation.transparent ? 'transparent' : 'aggregated' }, 'reload: the endpoint changes mode, so the live sessions end (their clients are answered 404 and initialize again)');
      }
      current = generation;
      generation.activate();
      const { drained } = theServer.swap({ chain: generation.chain, mcp: generation.endpoint, publicUrls: publicUrlsOf(next) });
      if (generation.challenge !== null) theServer.setAuthChallenge(generation.challenge);
      old.streams.drain();
      log.info(
        {
          file: next.file,
          url: httpUrlOf(address, generation.mcpPath),
          mode: generation.transparent ? 'transparent' : 'aggregated',
          backendsAdded: changes.added,
          backendsRemoved: changes.removed,
          backendsChanged: changes.changed,
          incomingAuth: changes.incomingAuth,
          outgoingAuth: changes.outgoingAuth,
          plugins: changes.plugins,
          other: changes.other,
          backends: generation.backends.map((b) => `${b.name}=${b.url.href}`),
        },
        `reload applied: ${describe(changes)}`,
      );
      // The old generation closes once its requests are done, without holding up the next reload.
      void drained.then(async (done) => {
        if (!done) log.warn({}, 'reload: requests on the previous configuration outlived the shutdown grace period, closing them');
        old.streams.abort();
        await close(old);
      });
      return { status: 'applied', changes };
    };

    return {
      url,
      address,
      server: theServer,
      get backends() {
        return current!.backends;
      },
      get config() {
        return current!.config;
      },
      reload(next, builtins = []) {
        const run = queue.then(() => apply(next, builtins)).catch((err: unknown): ReloadOutcome => {
          log.error({ err }, 'reload failed');
          return { status: 'failed', error: err };
        });
        queue = run;
        return run;
      },
      stop: () => {
        stopped = true;
        return app.stop();
      },
    };
  } catch (err) {
    await app.stop();
    throw err;
  }
}

/** "backends added: a, b; removed: c; auth: incoming; plugins". */
export function describe(changes: Changes): string {
  const parts: string[] = [];
  if (changes.added.length > 0) parts.push(`backends added: ${changes.added.join(', ')}`);
  if (changes.removed.length > 0) parts.push(`backends removed: ${changes.removed.join(', ')}`);
  if (changes.changed.length > 0) parts.push(`backends changed: ${changes.changed.join(', ')}`);
  const auth = [changes.incomingAuth ? 'incoming' : null, changes.outgoingAuth ? 'outgoing' : null].filter((a) => a !== null);
  if (auth.length > 0) parts.push(`auth changed: ${auth.join(', ')}`);
  if (changes.plugins) parts.push('plugins changed');
  if (changes.other.length > 0) parts.push(`changed: ${changes.other.join(', ')}`);
  return parts.join('; ');
}
