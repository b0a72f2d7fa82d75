/**
 * One generation of a virtual MCP server: what a reload builds anew from a configuration and
 * swaps in whole (virtual-mcp-server.ts, reload) — the plugins and their chain, the backend connections, the MCP
 * endpoint and its health monitor, the SSE streams it opened. The HTTP server, the metrics and
 * the session storage are the process's and outlive every generation.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { backendInfo, type BackendInfo } from '../plugin-api/backend.ts';
import { Chain } from '../server/chain.ts';
import type { VmcpConfig } from '../config/vmcp-types.ts';
import type { AuthChallenge } from '../base/errors.ts';
import type { McpEndpoint } from '../server/mcp-endpoint.ts';
import { TransparentEndpoint } from '../mcp/transparent-endpoint.ts';
import type { SessionOwners } from '../mcp/session-owners.ts';
import { OpenStreams } from '../mcp/streams.ts';
import { createAggregated, type SessionStorage } from '../mcp/aggregate/compose.ts';
import type { SessionEnder, ShownCarrier } from '../mcp/aggregate/group.ts';
import type { ShownLists } from '../mcp/aggregate/shown-lists.ts';
import { needsAggregation } from '../config/aggregation-config.ts';
import type { GatewayMetrics } from '../observe/metrics.ts';
import { createPlugins, importPlugin, type PluginSpec } from '../plugin-api/plugin-loader.ts';
import type { MaybePromise, Plugin, PluginDefinition } from '../plugin-api/plugin.ts';
import { Upstreams, type UpstreamOptions } from '../upstream/upstreams.ts';
import type { HopMark } from '../http/hop-mark.ts';
import type { ChannelBackends } from '../upstream/channel/channel-backends.ts';
import { storageFor } from './reload-sessions.ts';
import type { TokenBuckets } from '../base/token-bucket.ts';
import { RateLimits } from '../mcp/rate-limits.ts';

export interface GenerationOptions {
  readonly config: VmcpConfig;
  readonly log: Logger;
  /** The application the plugins run in (`PluginHost.origin`). */
  readonly origin: object;
  readonly metrics: GatewayMetrics;
  readonly storage: SessionStorage;
  /** Who opened each transparent session: the process's, shared by every generation as the storage is. */
  readonly owners: SessionOwners;
  /** The rate limits' token buckets: the process's (or the replicas', in Redis), kept across reloads. */
  readonly buckets: TokenBuckets;
  /** Plugins the composition root chose for this config (incoming auth first). */
  readonly builtins: readonly PluginSpec[];
  /** Plugins given in code; they run after those of the config file. */
  readonly plugins: readonly PluginSpec[];
  readonly upstreams?: Partial<UpstreamOptions>;
  /** The server's entry in Via, which its requests to backends carry (the same in every generation). */
  readonly hops?: HopMark;
  /** The stdio and SSE backends' transports, shared by the generations that have a backend unchanged. */
  readonly channels?: ChannelBackends;
  /** Told when a plugin of this generation sets the auth challenge. */
  readonly onChallenge: (generation: Generation, challenge: AuthChallenge) => void;
  /** The generation serving now (a reload): its plugins kept across reloads are taken over. */
  readonly previous?: Generation | null;
}

export function mcpPathOf(config: VmcpConfig): string {
  const resourceUrl = config.incomingAuth.resourceUrl;
  return resourceUrl === null ? '/mcp' : new URL(resourceUrl).pathname;
}

export function publicUrlsOf(config: VmcpConfig): string[] {
  return [config.incomingAuth.resourceUrl, config.authServer?.issuer].filter((u): u is string => typeof u === 'string');
}

type Undo = () => MaybePromise<void>;

/** prom-client's metrics have a name, which its types leave out of Metric. */
function nameOf(metric: Parameters<Registry['registerMetric']>[0]): string {
  return (metric as unknown as { name: string }).name;
}

export class Generation {
  readonly config: VmcpConfig;
  readonly backends: readonly BackendInfo[];
  readonly mcpPath: string;
  /**
   * One backend, passed through as it is: one backend with no tool configuration and no plugin
   * view (a view decides per caller on whole lists, which the session machinery keeps and pages:
   * a group of one, under the backend's own names). Settled once the chain is made.
   */
  transparent: boolean;
  readonly streams: OpenStreams;
  /** Backends of earlier generations this one has not (live sessions may still name their tools). */
  readonly removedBackends: readonly string[];
  challenge: AuthChallenge | null = null;
  #chain: Chain | null = null;
  #endpoint: McpEndpoint | null = null;
  #sessions: (SessionEnder & ShownCarrier) | null = null;
  #startHealth: (() => void) | null = null;
  #activate: ((sessions: SessionEnder) => void) | null = null;
  #plugins: Plugin[] = [];
  /** Plugins built for this generation's definitions, for the next generation to take over the kept ones. */
  readonly #byDefinition = new Map<PluginDefinition<unknown>, Plugin>();
  /** Plugins taken over from the previous generation: started already, and its until this one serves. */
  #inherited: { readonly from: Generation; readonly plugins: Plugin[] } | null = null;
  /** Metrics a plugin registered under a name the serving generation's plugin holds: they take it over on activate. */
  readonly #metricsToTakeOver: Parameters<Registry['registerMetric']>[0][] = [];
  readonly #started: Plugin[] = [];
  readonly #undo: { readonly what: string; readonly undo: Undo }[] = [];
  readonly #log: Logger;
  #closing: Promise<void> | null = null;

  private constructor(config: VmcpConfig, log: Logger, metrics: GatewayMetrics, previous: Generation | null) {
    this.config = config;
    const names = new Set(config.backends.map((b) => b.name));
    const before = previous === null ? [] : [...previous.removedBackends, ...previous.config.backends.map((b) => b.name)];
    this.removedBackends = [...new Set(before)].filter((name) => !names.has(name));
    this.#log = log;
    const passthrough = new Set(config.passthroughHeaders);
    this.backends = config.backends.map((b) => backendInfo(b.name, b.url, b.timeoutMs, b.externalAuth, b, passthrough, b.annotations, b.authzClaims, b.endpointPolicy, b.transport));
    this.mcpPath = mcpPathOf(config);
    this.transparent = !needsAggregation(this.backends.length, config.aggregation, config.registry !== null);
    this.streams = new OpenStreams(metrics);
  }

  /** Builds a generation (nothing started); what was acquired is released if it fails. */
  static async build(options: GenerationOptions): Promise<Generation> {
    const generation = new Generation(options.config, options.log, options.metrics, options.previous ?? null);
    try {
      await generation.#build(options);
      return generation;
    } catch (err) {
      await generation.close();
      throw err;
    }
  }

  /** The plugins and their chain, the connections to the backends, then the MCP endpoint over them. */
  async #build(options: GenerationOptions): Promise<void> {
    const chain = await this.#pluginChain(options);
    // Plugins stop last: what a resource does while it closes may still run hooks.
    this.#own('plugins', () => this.#stopStarted());
    const upstreams = new Upstreams(options.upstreams, { log: options.log, hops: options.hops, channels: options.channels ?? null });
    this.#own('backend connections', () => upstreams.close());
    this.#endpoint = await this.#mcpEndpoint(options, chain, upstreams);
    const endpoint = this.#endpoint;
    this.#own('MCP endpoint', () => endpoint.close());
  }

  /** Plugins created (or kept from the previous generation), in order, and the chain of their hooks. */
  async #pluginChain(options: GenerationOptions): Promise<Chain> {
    const { config, log, metrics } = options;
    const backends = this.backends;
    // Plugins: built-ins first (incoming auth is the first phase of everything), then the config's, then code's.
    const fromConfig: PluginSpec[] = [];
    for (const ref of config.plugins) {
      fromConfig.push({ definition: await importPlugin(ref.module, config.dir, ref.yamlPath), config: ref.config, source: ref.yamlPath });
    }
    const previous = options.previous ?? null;
    const inherited: Plugin[] = [];
    const existing = (definition: PluginDefinition<unknown>): Plugin | undefined => {
      const plugin = definition.keptAcrossReloads === true && previous !== null ? previous.#byDefinition.get(definition) : undefined;
      if (plugin !== undefined) inherited.push(plugin);
      return plugin;
    };
    const specs = [...options.builtins, ...fromConfig, ...options.plugins];
    this.#plugins = await createPlugins(specs, (name) => ({
      log: log.child({ plugin: name }),
      metrics: this.#registryFor(metrics.registry),
      mcpPath: this.mcpPath,
      backends,
      configDir: config.dir,
      origin: options.origin,
      setAuthChallenge: (challenge) => {
        this.challenge = challenge;
        options.onChallenge(this, challenge);
      },
    }), existing);
    specs.forEach((spec, i) => this.#byDefinition.set(spec.definition, this.#plugins[i]!));
    if (previous !== null && inherited.length > 0) this.#inherited = { from: previous, plugins: inherited };
    this.#chain = new Chain(this.#plugins, metrics.phaseTimer);
    if (this.transparent && this.#chain.views !== null) {
      this.transparent = false;
      log.info({ backend: backends[0]!.name }, 'one backend, served as a group of one under its own names (not passed through): a plugin decides what each caller sees of it');
    }
    return this.#chain;
  }

  /**
   * The aggregated endpoint of a group, or the transparent endpoint of one backend with the same
   * session machinery as its era bridge.
   */
  async #mcpEndpoint(options: GenerationOptions, chain: Chain, upstreams: Upstreams): Promise<McpEndpoint> {
    const { config, log, metrics } = options;
    const backends = this.backends;
    const shared = storageFor(options.storage, backends.map((b) => b.name));
    const transparent = this.transparent;
    const limits = RateLimits.of(config.rateLimiting, options.buckets, metrics);
    // A transparent endpoint has the same session machinery, as its era bridge, for its one backend
    // under its own names: it serves the requests whose generation of MCP is not the backend's,
    // and checks the backend's health.
    // A registry-fed group keeps its prefixes with one backend: they must not change when another joins.
    const single = backends.length === 1 && !needsAggregation(1, config.aggregation, config.registry !== null);
    const aggregated = await createAggregated({
      // One backend keeps its names: with no other to clash with, `priority` leaves every name bare.
      config: single ? { ...config, aggregation: { ...config.aggregation, conflictResolution: 'priority' } } : config,
      bridge: transparent,
      path: this.mcpPath,
      backends,
      upstreams,
      chain,
      metrics,
      streams: this.streams,
      log,
      storage: shared.storage,
      removedBackends: this.removedBackends,
      limits,
    });
    this.#own(transparent ? 'era bridge' : 'aggregated sessions', () => aggregated.close());
    this.#sessions = aggregated.sessions;
    this.#activate = shared.activate;
    this.#startHealth = () => aggregated.health.start();
    const { bridge } = aggregated.served;
    if (bridge === null) return aggregated.served.endpoint;
    this.#own('era bridge', () => bridge.close());
    return new TransparentEndpoint({
      path: this.mcpPath,
      bridge,
      backend: backends[0]!,
      upstreams,
      chain,
      metrics: metrics.backend(backends[0]!.name),
      streams: this.streams,
      maxBodyBytes: config.server.maxBodyBytes,
      owners: options.owners,
      limits,
    });
  }

  get chain(): Chain {
    return this.#chain!;
  }

  get endpoint(): McpEndpoint {
    return this.#endpoint!;
  }

  /** Starts the plugins in order and the health monitor; on failure, what started is stopped and the error thrown. */
  async start(): Promise<void> {
    const inherited = this.#inherited?.plugins ?? [];
    for (const plugin of this.#plugins) {
      if (inherited.includes(plugin)) continue; // running already, in the serving generation
      await plugin.start?.();
      this.#started.push(plugin);
    }
    this.#startHealth?.();
  }

  /** What the live sessions' clients were shown of their lists (for the generation that replaces this one). */
  shownLists(): Map<string, ShownLists> {
    return this.#sessions?.shownLists() ?? new Map();
  }

  /** What the replaced generation's clients were shown: each is told what changed for it when its stream opens here. */
  carryShown(shown: Map<string, ShownLists>): void {
    this.#sessions?.carryShown(shown);
  }

  /** This generation serves from now on (relay messages, session expiry, its plugins' metrics). */
  activate(): void {
    // The plugins taken over are this generation's from now on: it stops them, the previous one no longer does.
    const inherited = this.#inherited;
    if (inherited !== null) {
      this.#inherited = null;
      inherited.from.#release(inherited.plugins);
      this.#started.push(...inherited.plugins);
    }
    this.#activate?.(this.#sessions!);
    for (const metric of this.#metricsToTakeOver.splice(0)) {
      this.#registry?.removeSingleMetric(nameOf(metric));
      this.#registry?.registerMetric(metric);
    }
  }

  #registry: Registry | null = null;

  /**
   * The process's registry as this generation's plugins see it: a metric whose name the serving
   * generation's plugin registered (the same plugin, reloaded) is held until this one serves, and
   * then replaces it (its counts start again from zero, as after a restart). Registered at once,
   * prom-client would refuse the name, and the reload with it.
   */
  #registryFor(registry: Registry): Registry {
    this.#registry = registry;
    const held = this.#metricsToTakeOver;
    return new Proxy(registry, {
      get(target, property) {
        if (property === 'registerMetric') {
          return (metric: Parameters<Registry['registerMetric']>[0]) => {
            if (target.getSingleMetric(nameOf(metric)) === undefined) target.registerMetric(metric);
            else held.push(metric);
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }

  /** Releases everything in reverse order; never rejects. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      for (const { what, undo } of this.#undo.splice(0).reverse()) {
        try {
          await undo();
        } catch (err) {
          this.#log.error({ err, what }, `failed to stop ${what}`);
        }
      }
    })();
    return this.#closing;
  }

  /** `plugins` now belong to the generation that took them over: closing this one leaves them running. */
  #release(plugins: readonly Plugin[]): void {
    for (const plugin of plugins) {
      const i = this.#started.indexOf(plugin);
      if (i !== -1) this.#started.splice(i, 1);
    }
  }

  #own(what: string, undo: Undo): void {
    this.#undo.push({ what, undo });
  }

  async #stopStarted(): Promise<void> {
    for (const plugin of this.#started.splice(0).reverse()) {
      if (plugin.stop === undefined) continue;
      try {
        await plugin.stop();
      } catch (err) {
        this.#log.error({ err, what: `plugin ${plugin.name}` }, `failed to stop plugin ${plugin.name}`);
      }
    }
  }
}
