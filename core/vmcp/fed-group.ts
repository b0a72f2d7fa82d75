/**
 * A group fed by a registry, as the virtual MCP server keeps it across reloads: the feed of the
 * registry the configuration names (registry-feed.ts), started anew when a reload changes how it
 * is read, and what the group serves under a configuration (the file's backends and the
 * registry's servers, fed-config.ts).
 *
 * A reload of the file that names another registry (its `url` or `name`) drops the servers of the
 * old one at once and reads the new one; one that changes only how it is read (token, interval,
 * bounds) keeps the servers until the next read says otherwise. The registry is read over HTTP,
 * unless code gave `startVmcp` a source of its own (`registrySource`), which then reads whatever
 * the file's `url` says and is never closed here (its owner closes it).
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { StartupError } from '../base/errors.ts';
import type { RegistryFeedConfig, VmcpConfig } from '../config/vmcp-types.ts';
import type { GatewayMetrics } from '../observe/metrics.ts';
import { withFedServers } from './fed-config.ts';
import { FeedMetrics } from './feed-metrics.ts';
import { RegistryFeed } from './registry-feed.ts';
import { httpRegistrySource, type RegistrySource } from './registry-source.ts';

export interface FedGroupOptions {
  readonly log: Logger;
  readonly metrics: GatewayMetrics;
  /** A source given in code (`startVmcp`'s `registrySource`): read instead of the registry's URL. */
  readonly source?: RegistrySource;
  /** The registry's servers changed: the group should serve `effective(config)` anew. */
  readonly onChange: () => void;
}

/** Whether two settings read the same registry (the same servers, whatever the token or the bounds). */
function sameRegistry(a: RegistryFeedConfig, b: RegistryFeedConfig): boolean {
  return a.url === b.url && a.name === b.name;
}

export class FedGroup {
  readonly #o: FedGroupOptions;
  readonly #metrics: FeedMetrics;
  #feed: RegistryFeed | null = null;
  #running = false;
  #stopped = false;
  /** The naming notes last logged, so that each change of them is logged once. */
  #notes = '';
  /** The last change could not be applied: the next read tells it again. */
  #retry = false;

  constructor(options: FedGroupOptions) {
    this.#o = options;
    this.#metrics = FeedMetrics.of(options.metrics.registry);
  }

  /** A source given in code needs a registry in the configuration: it says how often, and what the servers get. */
  static check(config: VmcpConfig, source: RegistrySource | undefined): void {
    if (source !== undefined && config.registry === null) {
      throw new StartupError(`startVmcp was given a registrySource, but MCPGroup/${config.groupRef} has no spec.registry: add one (url, name, syncPolicy) for the source to feed the group`);
    }
  }

  /** Feeds the group from `settings` (null: no registry) from now on; the first read of a new feed is awaited. */
  async configure(settings: RegistryFeedConfig | null): Promise<void> {
    const old = this.#feed;
    if (this.#stopped || isDeepStrictEqual(old?.settings ?? null, settings)) return;
    const feed = settings === null ? null : this.#feedOf(settings);
    if (feed !== null && old !== null && sameRegistry(old.settings, feed.settings)) feed.inherit(old.servers);
    this.#feed = feed;
    if (old !== null) await this.#stopFeed(old);
    if (feed === null) {
      this.#metrics.servers = 0;
      return;
    }
    if (feed.servers.length === 0) await feed.first();
    if (this.#running) feed.start();
  }

  /** The servers last told could not be served (the generation failed to build or start): told again at the next read. */
  applyFailed(): void {
    this.#retry = true;
  }

  /** Reads on the interval from now on (the server listens). */
  start(): void {
    this.#running = true;
    this.#feed?.start();
  }

  /** What the group serves under `config`: the file's backends, and the servers of the registry it names. */
  effective(config: VmcpConfig): VmcpConfig {
    const feed = this.#feed;
    const servers = feed === null || config.registry === null || !sameRegistry(feed.settings, config.registry) ? [] : feed.servers;
    const { config: merged, naming } = withFedServers(config, servers);
    const notes = naming.notes.join('\n');
    if (notes !== this.#notes) for (const note of naming.notes) this.#o.log.warn({ registry: config.registry?.where }, note);
    this.#notes = notes;
    this.#metrics.servers = naming.servers.length;
    return merged;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    const feed = this.#feed;
    this.#feed = null;
    if (feed !== null) await this.#stopFeed(feed);
  }

  #feedOf(settings: RegistryFeedConfig): RegistryFeed {
    const source = this.#o.source ?? httpRegistrySource(settings);
    const onChange = (): void => {
      this.#retry = false;
      this.#o.onChange();
    };
    const onUnchanged = (): void => {
      if (this.#retry) onChange();
    };
    return new RegistryFeed({ settings, source, log: this.#o.log, metrics: this.#metrics, onChange, onUnchanged });
  }

  async #stopFeed(feed: RegistryFeed): Promise<void> {
    await feed.stop();
    // A source of the code's own is its to close; one made here from the URL is closed here.
    if (this.#o.source === undefined) await feed.source.close?.().catch(() => undefined);
  }
}
