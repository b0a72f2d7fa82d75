/**
 * Composes a running virtual MCP server from its resolved config on the application lifecycle
 * (app.ts): the session storage and the HTTP server, which live as long as the process, and a
 * generation (vmcp/generation.ts: plugins and chain, connection pools, the MCP endpoint —
 * transparent for one backend, aggregated for a group) that a reload replaces whole. The
 * composition root (the CLI, or a user's own code) decides which plugins run; this file knows no
 * identity provider.
 *
 * Reload (`RunningVmcp.reload`): the new configuration's generation is built and started beside
 * the serving one, with the same session storage; the server then routes new requests to it
 * (GatewayServer.swap), the old generation's standalone streams are ended (clients reopen them,
 * on the new one), and it is closed once its requests are done (or the shutdown grace period is
 * over). What needs a restart is in vmcp/reload-diff.ts; such a reload is refused as a whole.
 *
 * A group fed by a registry (vmcp/fed-group.ts) is read once before the first generation is built
 * and then on its interval; when the registry's servers change, the configuration now served
 * from the file is applied again with them, as a reload of the same file would be (the same
 * queue, the same generations: live sessions keep working and are told what changed).
 */
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { BackendInfo } from '../plugin-api/backend.ts';
import { App } from '../server/app.ts';
import type { VmcpConfig } from '../config/vmcp-types.ts';
import { createSessionStorage, type SessionStorage } from '../mcp/aggregate/compose.ts';
import { createSessionOwners } from '../mcp/redis-session-owners.ts';
import type { SessionOwners } from '../mcp/session-owners.ts';
import { bucketsFor } from '../mcp/rate-limits.ts';
import type { TokenBuckets } from '../base/token-bucket.ts';
import { createLogger } from '../observe/log.ts';
import { GatewayMetrics } from '../observe/metrics.ts';
import type { PluginSpec } from '../plugin-api/plugin-loader.ts';
import { listenerOptions, type GatewayServer, type ShutdownHook } from '../server/gateway-server.ts';
import { httpUrlOf } from '../http/address.ts';
import { HopMark } from '../http/hop-mark.ts';
import { ChannelBackends, type ChannelOpeners } from '../upstream/channel/channel-backends.ts';
import { CHANNEL_OPENERS } from '../upstream/channel/channel-openers.ts';
import type { UpstreamOptions } from '../upstream/upstreams.ts';
import { FedGroup } from './fed-group.ts';
import { Generation, publicUrlsOf } from './generation.ts';
import type { RegistrySource } from './registry-source.ts';
import { changesOf, describe, nothingChanged, restartNeeded, type Changes, type RestartNeeded } from './reload-diff.ts';

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
  /**
   * Where the registry of `MCPGroup.spec.registry` is read instead of its URL: a registry in the
   * same process (plugins/registry/in-process-source.ts). Not closed by the server.
   */
  registrySource?: RegistrySource;
  /** How stdio and SSE backends are reached (default: child processes and SSE connections): for tests. */
  channelOpeners?: ChannelOpeners;
  listenLast?: boolean; // App's: listen once everything has started (a worker of `server.workers`)
}

/** What made a reload: the file (SIGHUP, a watch, code calling `reload`), or the registry's servers changing. */
type ReloadTrigger = 'file' | 'registry';

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
  const app = new App({ log: options.log ?? createLogger(), metrics: options.metrics ?? new GatewayMetrics(), listenLast: options.listenLast });
  try {
    await app.observe(options.config, 'gatehouse-vmcp');
    const vmcp = await VirtualMcpServer.compose(app, options);
    await vmcp.listen();
    return vmcp;
  } catch (err) {
    await app.stop();
    throw err;
  }
}

/** What lives as long as the process, whatever the reloads: built once by `compose`. */
interface Lasting {
  readonly storage: SessionStorage;
  readonly owners: SessionOwners;
  readonly channels: ChannelBackends;
  readonly buckets: TokenBuckets;
}

/**
 * A running virtual MCP server: the application, what outlives reloads, and its generations
 * (the serving one, and those draining). Reloads run one at a time, as named steps (`#apply`).
 */
class VirtualMcpServer implements RunningVmcp {
  readonly #app: App;
  readonly #options: StartVmcpOptions;
  readonly #lasting: Lasting;
  readonly #log: Logger;
  /** Generations not closed yet: the serving one, and those draining. */
  readonly #live = new Set<Generation>();
  /** The serving generation (null only while `compose` builds the first). */
  #current: Generation | null = null;
  #server: GatewayServer | null = null;
  #address: AddressInfo | null = null;
  #url = '';
  #stopped = false;
  #reloads: Promise<unknown> = Promise.resolve();
  /** The registry feeding the group, if any. */
  readonly #fed: FedGroup;
  /** The configuration of the file now served, and its built-ins: applied again with the registry's servers when they change. */
  #file: { readonly config: VmcpConfig; readonly builtins: readonly PluginSpec[] };
  /** A reload for the registry's servers is queued and has not started. */
  #fedQueued = false;
  /** This server's entry in Via: every generation's backend requests carry it, and the server refuses a request that comes back with it. */
  readonly #hops = new HopMark();

  private constructor(app: App, options: StartVmcpOptions, lasting: Lasting) {
    this.#app = app;
    this.#options = options;
    this.#lasting = lasting;
    this.#log = app.log;
    this.#file = { config: options.config, builtins: options.builtins ?? [] };
    this.#fed = new FedGroup({ log: app.log, metrics: app.metrics, source: options.registrySource, onChange: () => this.#fedChanged() });
  }

  /** Session storage and owners (closed with the app), the first generation, and the HTTP server in front of it. */
  static async compose(app: App, options: StartVmcpOptions): Promise<VirtualMcpServer> {
    const { config } = options;
    FedGroup.check(config, options.registrySource);
    const storage = app.own(await createSessionStorage(config, app.log), (s) => s.close(), 'session storage');
    const owners = app.own(await createSessionOwners(config, app.log), (o) => o.close(), 'transparent session owners').owners;
    // Closed after the generations (the app closes in reverse order): their children end last.
    const channels = app.own(new ChannelBackends(options.channelOpeners ?? CHANNEL_OPENERS, app.log), (c) => c.close(), 'stdio and SSE backends');
    const buckets = bucketsFor(config.name, storage.redis, app.log);
    const vmcp = new VirtualMcpServer(app, options, { storage, owners, channels, buckets });
    app.own(vmcp.#fed, (fed) => fed.stop(), 'registry feed');
    // The registry's servers are in the first generation when the registry answers in time.
    await vmcp.#fed.configure(config.registry);
    vmcp.#current = await vmcp.#build(vmcp.#fed.effective(config), options.builtins ?? []);
    app.own(vmcp.#live, async (all) => {
      for (const generation of [...all]) await vmcp.#close(generation);
    }, 'MCP endpoint, plugins and backend connections');
    vmcp.#serve();
    return vmcp;
  }

  get url(): string {
    return this.#url;
  }

  get address(): AddressInfo {
    return this.#address!;
  }

  get server(): GatewayServer {
    return this.#server!;
  }

  get backends(): readonly BackendInfo[] {
    return this.#serving.backends;
  }

  get config(): VmcpConfig {
    return this.#serving.config;
  }

  get #serving(): Generation {
    return this.#current!;
  }

  reload(next: VmcpConfig, builtins: readonly PluginSpec[] = []): Promise<ReloadOutcome> {
    return this.#enqueue(async () => {
      const outcome = await this.#apply(this.#fed.effective(next), builtins, 'file');
      if (outcome.status === 'applied' || outcome.status === 'unchanged') {
        this.#file = { config: next, builtins };
        await this.#fed.configure(next.registry);
      }
      return outcome;
    });
  }

  stop(): Promise<void> {
    this.#stopped = true;
    return this.#app.stop();
  }

  /** Runs `reload` after the reloads before it; never rejects. */
  #enqueue(reload: () => Promise<ReloadOutcome>): Promise<ReloadOutcome> {
    const run = this.#reloads.then(reload).catch((err: unknown): ReloadOutcome => {
      this.#log.error({ err }, 'reload failed');
      return { status: 'failed', error: err };
    });
    this.#reloads = run;
    return run;
  }

  /** The registry's servers changed: the file's configuration is applied again with them (once for changes that come while one waits). */
  #fedChanged(): void {
    if (this.#stopped || this.#current === null || this.#fedQueued) return;
    this.#fedQueued = true;
    void this.#enqueue(async () => {
      this.#fedQueued = false;
      const { config, builtins } = this.#file;
      const outcome = await this.#apply(this.#fed.effective(config), builtins, 'registry');
      if (outcome.status === 'failed' && !this.#stopped) this.#fed.applyFailed();
      return outcome;
    });
  }

  /** The HTTP server, routing to the first generation; it tells every live generation's streams at shutdown, draining ones included. */
  #serve(): void {
    const first = this.#serving;
    const config = first.config;
    const streams: ShutdownHook = {
      drain: () => this.#live.forEach((g) => g.streams.drain()),
      abort: () => this.#live.forEach((g) => g.streams.abort()),
    };
    const server = this.#app.serve({
      host: this.#options.host ?? '127.0.0.1',
      port: this.#options.port ?? 4483,
      mcp: first.endpoint,
      chain: first.chain,
      shutdown: [streams],
      publicUrls: publicUrlsOf(config),
      hops: this.#hops,
      ...listenerOptions(config.server),
    });
    this.#server = server;
    if (first.challenge !== null) server.setAuthChallenge(first.challenge);
    this.#app.onStart(async () => {
      await first.start();
      first.activate();
      this.#fed.start();
    });
  }

  /** Starts the app (plugins, then the listeners) and logs where it listens. */
  async listen(): Promise<void> {
    const first = this.#serving;
    this.#address = await this.#app.start();
    this.#url = this.#app.url(first.mcpPath);
    const admin = this.#server!.adminAddress;
    this.#log.info(
      {
        url: this.#url,
        mode: modeOf(first),
        backends: first.backends.map((b) => `${b.name}=${b.url.href}`),
        ...(admin === null ? {} : { admin: httpUrlOf(admin) }),
      },
      'virtual MCP server listening',
    );
  }

  async #build(config: VmcpConfig, builtins: readonly PluginSpec[]): Promise<Generation> {
    const generation = await Generation.build({
      config,
      log: this.#log,
      origin: this.#app,
      metrics: this.#app.metrics,
      // What outlives the generations: the session storage and owners, the buckets, the channels.
      ...this.#lasting,
      builtins,
      plugins: this.#options.plugins ?? [],
      upstreams: this.#options.upstreams,
      hops: this.#hops,
      onChallenge: (g, challenge) => {
        if (g === this.#current) this.#server?.setAuthChallenge(challenge);
      },
      previous: this.#current,
    });
    this.#live.add(generation);
    return generation;
  }

  async #close(generation: Generation): Promise<void> {
    await generation.close();
    this.#live.delete(generation);
  }

  /** One reload: refused when a part needs a restart, skipped when nothing changed, else the next generation is built, started and swapped in. */
  async #apply(next: VmcpConfig, builtins: readonly PluginSpec[], trigger: ReloadTrigger): Promise<ReloadOutcome> {
    if (this.#stopped) return stopping();
    const old = this.#serving;
    const parts = restartNeeded(old.config, next);
    if (parts.length > 0) return this.#refuseRestart(next, parts);
    const changes = changesOf(old.config, next);
    if (nothingChanged(changes)) {
      if (trigger === 'file') this.#log.info({ file: next.file }, 'reload: the configuration is unchanged, nothing to apply');
      return { status: 'unchanged' };
    }
    const generation = await this.#startNext(next, builtins);
    if (!(generation instanceof Generation)) return generation;
    this.#switchTo(generation, old, changes, trigger);
    return { status: 'applied', changes };
  }

  #refuseRestart(next: VmcpConfig, parts: readonly RestartNeeded[]): ReloadOutcome {
    for (const part of parts) this.#log.error({ path: part.path, reason: part.reason }, `reload refused: ${part.path} needs a restart (${part.reason})`);
    this.#log.error({ file: next.file, needsRestart: parts.map((p) => p.path) }, 'reload refused: nothing was applied, the running configuration keeps serving');
    return { status: 'restart-needed', parts };
  }

  /** The next generation built and its plugins started, or why not (the running one keeps serving). */
  async #startNext(next: VmcpConfig, builtins: readonly PluginSpec[]): Promise<Generation | ReloadOutcome> {
    let generation: Generation;
    try {
      generation = await this.#build(next, builtins);
    } catch (err) {
      this.#log.error({ err, file: next.file }, 'reload refused: the new configuration could not be built; the running one keeps serving');
      return { status: 'failed', error: err };
    }
    if (this.#stopped) {
      // Stopped while it was built: its plugins never start.
      await this.#close(generation);
      return stopping();
    }
    try {
      await generation.start();
    } catch (err) {
      this.#log.error({ err, file: next.file }, 'reload refused: a plugin of the new configuration failed to start; the running one keeps serving');
      await this.#close(generation);
      return { status: 'failed', error: err };
    }
    if (this.#stopped) {
      await this.#close(generation);
      return stopping();
    }
    return generation;
  }

  /** New requests go to `generation`; the old one's streams end (clients reopen them here) and it closes once its requests are done. */
  #switchTo(generation: Generation, old: Generation, changes: Changes, trigger: ReloadTrigger): void {
    if (generation.transparent !== old.transparent) {
      this.#log.warn({ from: modeOf(old), to: modeOf(generation) }, 'reload: the endpoint changes mode, so the live sessions end (their clients are answered 404 and initialize again)');
    }
    const server = this.#server!;
    const next = generation.config;
    this.#current = generation;
    // Before the old streams end: their clients reopen them here, and hear what changed for them.
    generation.carryShown(old.shownLists());
    generation.activate();
    const { drained } = server.swap({ chain: generation.chain, mcp: generation.endpoint, publicUrls: publicUrlsOf(next) });
    // The new incoming auth's challenge, or none (a reload to anonymous): never the old one's.
    server.setAuthChallenge(generation.challenge);
    old.streams.drain();
    this.#log.info(
      {
        file: next.file,
        trigger,
        url: httpUrlOf(this.#address!, generation.mcpPath),
        mode: modeOf(generation),
        backendsAdded: changes.added,
        backendsRemoved: changes.removed,
        backendsChanged: changes.changed,
        incomingAuth: changes.incomingAuth,
        outgoingAuth: changes.outgoingAuth,
        plugins: changes.plugins,
        other: changes.other,
        backends: generation.backends.map((b) => `${b.name}=${b.url.href}`),
      },
      `${trigger === 'registry' ? "the registry's servers applied" : 'reload applied'}: ${describe(changes)}`,
    );
    // The old generation closes once its requests are done, without holding up the next reload.
    void drained.then(async (done) => {
      if (!done) this.#log.warn({}, 'reload: requests on the previous configuration outlived the shutdown grace period, closing them');
      old.streams.abort();
      await this.#close(old);
    });
  }
}

const stopping = (): ReloadOutcome => ({ status: 'failed', error: new Error('the server is stopping') });

const modeOf = (generation: Generation): 'transparent' | 'aggregated' => (generation.transparent ? 'transparent' : 'aggregated');
