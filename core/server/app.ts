/**
 * One application lifecycle, composed by both servers (the virtual MCP server and the registry),
 * in the manner of fastify's application hooks:
 *
 *   const app = new App({ log, metrics });
 *   await app.observe(config, 'gatehouse-vmcp');                               // traces, OTLP metrics, the audit trail (when enabled)
 *   const chain = await app.plugins(specs, { mcpPath, backends, configDir });  // create, in order
 *   const pool = app.own(new Upstreams(), (u) => u.close());                      // resources
 *   app.serve({ host, port, mcp, ... });                                          // the HTTP server
 *   app.onStart(() => health.start());
 *   const address = await app.start();   // listen, start plugins in order, hooks; ready
 *   await app.stop();                    // drain the server, then undo everything in reverse
 *
 * Whatever is acquired is registered with what undoes it, so that a start that fails half way
 * (a plugin whose start() throws, a port in use) releases exactly what was acquired, in reverse
 * order, and stop() does the same after the server has drained. The plugin host each plugin is
 * given, and the auth challenge a plugin sets before the server exists, live here too.
 */
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { BackendInfo } from '../plugin-api/backend.ts';
import { Chain } from './chain.ts';
import type { AuthChallenge } from '../base/errors.ts';
import { GatewayServer, type ServerOptions } from './gateway-server.ts';
import { httpUrlOf } from '../http/address.ts';
import type { GatewayMetrics } from '../observe/metrics.ts';
import { createPlugins, type PluginSpec } from '../plugin-api/plugin-loader.ts';
import type { MaybePromise, Plugin, PluginHost } from '../plugin-api/plugin.ts';
import { startTelemetry } from '../observe/telemetry/start-telemetry.ts';
import { startAuditTrail } from '../observe/audit/audit-trail.ts';
import type { AuditSettings } from '../observe/audit/audit-settings.ts';
import type { TelemetrySettings } from '../observe/telemetry/telemetry-settings.ts';
import { GATEHOUSE_VERSION, isModernVersion } from '../protocol/era.ts';

export interface AppOptions {
  readonly log: Logger;
  readonly metrics: GatewayMetrics;
  /**
   * Listen once everything has started, instead of first. First (the default) finds a port in
   * use before plugins take their time to start; last is for a worker of `server.workers`, whose
   * primary hands it connections from the moment it listens, with no readiness probe between.
   */
  readonly listenLast?: boolean;
}

/** What the plugin host tells every plugin about the server it runs in. */
export interface HostInfo {
  /** The MCP endpoint's path, or null (registry). */
  readonly mcpPath: string | null;
  readonly backends: readonly BackendInfo[];
  /** Directory of the config file: relative paths in plugin config resolve against it. */
  readonly configDir: string;
}

type Undo = () => MaybePromise<void>;

export class App {
  readonly log: Logger;
  readonly metrics: GatewayMetrics;
  #plugins: readonly Plugin[] = [];
  #chain: Chain | null = null;
  #server: GatewayServer | null = null;
  #challenge: AuthChallenge | null = null;
  /** What undoes each acquisition, in the order they were made. */
  readonly #undo: { readonly what: string; readonly undo: Undo }[] = [];
  readonly #startHooks: (() => MaybePromise<void>)[] = [];
  /** The plugins whose start() has returned, in order. */
  readonly #started: Plugin[] = [];
  #stopping: Promise<void> | null = null;
  readonly #listenLast: boolean;

  constructor(options: AppOptions) {
    this.log = options.log;
    this.metrics = options.metrics;
    this.#listenLast = options.listenLast === true;
  }

  /** Validates every plugin's config (all problems at once), creates the plugins in order, compiles the chain. */
  async plugins(specs: readonly PluginSpec[], info: HostInfo): Promise<Chain> {
    const hostFor = (name: string): PluginHost => ({
      log: this.log.child({ plugin: name }),
      metrics: this.metrics.registry,
      mcpPath: info.mcpPath,
      backends: info.backends,
      configDir: info.configDir,
      origin: this,
      // One auth plugin per server sets it, usually before the server exists.
      setAuthChallenge: (challenge) => {
        this.#challenge = challenge;
        this.#server?.setAuthChallenge(challenge);
      },
    });
    this.#plugins = await createPlugins(specs, hostFor);
    this.#chain = new Chain(this.#plugins, this.metrics.phaseTimer);
    // Registered before every resource acquired after them, so plugins stop last: what a
    // resource does while it closes (a last health probe, a stream's end) may still run hooks.
    this.#undo.push({ what: 'plugins', undo: () => this.#stopStarted() });
    return this.#chain;
  }

  /**
   * Starts OpenTelemetry as `settings` say (nothing of it is loaded when they enable nothing):
   * traces and metrics of this app's server, subscribers of the observation seam. Stopped (its
   * queue exported) after the server has drained.
   */
  async observe(settings: { readonly telemetry: TelemetrySettings; readonly audit: AuditSettings }, defaultName: string): Promise<void> {
    await this.telemetry(settings.telemetry, defaultName);
    this.audit(settings.audit, defaultName);
  }

  /**
   * Starts the audit trail as `settings` say (nothing subscribes when they do not enable it): a
   * record per MCP request, refusal and plugin operation of this app. Subscribed after the tracer,
   * so a record has the request's trace id; stopped (its output flushed) after the server has drained.
   */
  audit(settings: AuditSettings, defaultComponent: string): void {
    const trail = startAuditTrail(settings, { owns: (server) => server === this.#server, origin: this, mcpRoute: 'mcp', defaultComponent, log: this.log });
    if (trail !== null) this.own(trail, (t) => t.stop(), 'audit trail');
  }

  async telemetry(settings: TelemetrySettings, defaultServiceName: string): Promise<void> {
    const telemetry = await startTelemetry(settings, {
      defaultServiceName,
      serviceVersion: GATEHOUSE_VERSION,
      owns: (server) => server === this.#server,
      metaCarries: isModernVersion,
      log: this.log,
    });
    if (telemetry !== null) this.own(telemetry, (t) => t.stop(), 'telemetry');
  }

  get chain(): Chain {
    if (this.#chain === null) throw new Error('App: plugins() comes before the chain is used');
    return this.#chain;
  }

  /** Registers `value` with what releases it; returns it. */
  own<T>(value: T, release: (value: T) => MaybePromise<void>, what = 'resource'): T {
    this.#undo.push({ what, undo: () => release(value) });
    return value;
  }

  /**
   * Creates the HTTP server (once), with the chain of plugins() (or one given: a server whose
   * plugins are a reloadable generation, see vmcp/generation.ts) and the challenge a plugin already set.
   */
  serve(options: Omit<ServerOptions, 'log' | 'metrics' | 'chain'> & { chain?: Chain }): GatewayServer {
    if (this.#server !== null) throw new Error('App: serve() is called once');
    const server = new GatewayServer({ ...options, log: this.log, metrics: this.metrics, chain: options.chain ?? this.chain });
    if (this.#challenge !== null) server.setAuthChallenge(this.#challenge);
    this.#server = server;
    return server;
  }

  get server(): GatewayServer {
    if (this.#server === null) throw new Error('App: serve() comes before the server is used');
    return this.#server;
  }

  /** Runs once everything has started, in the order given, before the server reports ready. */
  onStart(hook: () => MaybePromise<void>): void {
    this.#startHooks.push(hook);
  }

  /**
   * Listens, starts the plugins in order, runs the start hooks, and marks the server ready (with
   * `listenLast`, listens after the hooks). On any failure everything acquired so far is
   * released in reverse order, and the error is thrown.
   */
  async start(): Promise<AddressInfo> {
    const server = this.server;
    try {
      let address = this.#listenLast ? null : await server.listen();
      for (const plugin of this.#plugins) {
        await plugin.start?.();
        this.#started.push(plugin);
      }
      for (const hook of this.#startHooks) await hook();
      address ??= await server.listen();
      server.markReady();
      return address;
    } catch (err) {
      await this.stop();
      throw err;
    }
  }

  /** `http://host:port<path>` of the bound address. */
  url(path = ''): string {
    return httpUrlOf(this.server.address, path);
  }

  /**
   * Stops accepting and drains in-flight requests first, then releases everything in reverse
   * order of acquisition (the plugins last); a release that fails is logged and the others still
   * run, so stop() never rejects. Idempotent.
   */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      const server = this.#server;
      if (server !== null) await this.#release('HTTP server', () => server.close());
      for (const { what, undo } of this.#undo.splice(0).reverse()) await this.#release(what, undo);
    })();
    return this.#stopping;
  }

  /** Stops the started plugins in reverse order, each on its own. */
  async #stopStarted(): Promise<void> {
    for (const plugin of this.#started.splice(0).reverse()) {
      if (plugin.stop !== undefined) await this.#release(`plugin ${plugin.name}`, () => plugin.stop!());
    }
  }

  /** Runs one release; a failure is logged, never thrown (the other releases still run). */
  async #release(what: string, undo: Undo): Promise<void> {
    try {
      await undo();
    } catch (err) {
      this.log.error({ err, what }, `failed to stop ${what}`);
    }
  }
}
