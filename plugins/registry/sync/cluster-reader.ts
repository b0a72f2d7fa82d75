/**
 * The reader of a cluster-resource source: MCPServer resources, from manifest files
 * (`{manifests: [...]}`) or watched live in a Kubernetes cluster (`{kubernetes: {...}}`), as a
 * snapshot of server entries each with its own claims (cluster-resource.ts says how a resource
 * maps, and why entries never take the source's claims).
 *
 * - A read returns the whole current set; the digest covers the sorted items and the skipped
 *   resources, so an unchanged set reads as `unchanged`.
 * - In Kubernetes mode the watch runs from the reader's creation until `close()`; `onChange`
 *   listeners are called (at most once per `debounceMs`) when the set changes, so the scheduler
 *   syncs at once instead of at its next interval. A read before the first list waits for it
 *   (bounded by the list's own timeout). While the API server cannot be followed, reads serve
 *   the last set, until `staleAfterMs`: then they fail, so the source's status says why (its
 *   entries stay, as after any failure).
 * - In manifest mode each read reads the files again; `onChange` never fires (the scheduler's
 *   interval paces it).
 */
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import process from 'node:process';
import type { Logger } from 'pino';
import type { SyncItem } from '../store/source-sync-writer.ts';
import { ClusterApi, loadKubeConfig } from './cluster-api.ts';
import type { ManifestLimits } from './cluster-manifests.ts';
import { readManifestResources } from './cluster-manifests.ts';
import type { ClusterResource } from './cluster-resource.ts';
import { mapClusterResource } from './cluster-resource.ts';
import type { ResourceType, WatchLimits } from './cluster-watch.ts';
import { ClusterWatch } from './cluster-watch.ts';
import type { ReadContext, ReadOutcome, SourceReader } from './source-reader.ts';
import { SyncFailure } from './source-reader.ts';

export interface KubernetesSettings {
  /** One namespace, or null for all namespaces. */
  readonly namespace: string | null;
  /** A label selector (`registry=public`), or null for every MCPServer. */
  readonly labelSelector: string | null;
  /** Path of a kubeconfig file, or null for the pod's service account (in-cluster). */
  readonly kubeconfig: string | null;
}

export type ClusterSettings = { readonly manifests: readonly string[] } | { readonly kubernetes: KubernetesSettings };

export interface ClusterReaderOptions {
  /** Where relative paths (manifests, kubeconfig) resolve: the config file's directory. Default: the working directory. */
  readonly baseDir?: string;
  readonly log?: Logger | null;
  /** onChange fires at most this often (default 250 ms). */
  readonly debounceMs?: number;
  /** While the API server cannot be followed, reads serve the last set for this long (default 2 minutes). */
  readonly staleAfterMs?: number;
  /** The custom resource watched (default ToolHive's MCPServer, toolhive.stacklok.dev/v1alpha1). */
  readonly resource?: ResourceType;
  readonly manifestLimits?: Partial<ManifestLimits>;
  readonly watchLimits?: Partial<WatchLimits>;
}

export type ClusterReader = SourceReader & { onChange(listener: () => void): void };

/** Skipped resources named in the status, at most (the rest are counted). */
const MAX_SKIPPED = 100;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MAX_SELECTOR = 4096;

/** A reader for `settings`. Throws SyncFailure when the settings cannot work (no kubeconfig, a bad namespace). */
export function createClusterReader(settings: ClusterSettings, options: ClusterReaderOptions = {}): ClusterReader {
  const baseDir = options.baseDir ?? process.cwd();
  if ('manifests' in settings) {
    const paths = settings.manifests;
    if (!Array.isArray(paths) || paths.length === 0 || paths.some((path) => typeof path !== 'string' || path === '')) {
      throw new SyncFailure('cluster.manifests must list at least one file or directory');
    }
    return {
      read: async (context) => snapshot((await readManifestResources(paths, { baseDir, limits: options.manifestLimits, signal: context.signal })), context),
      onChange: () => {},
    };
  }
  return new KubernetesReader(settings.kubernetes, options, baseDir);
}

class KubernetesReader implements ClusterReader {
  readonly #watch: ClusterWatch;
  readonly #listeners: (() => void)[] = [];
  readonly #debounceMs: number;
  readonly #staleAfterMs: number;
  readonly #log: Logger | null;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(settings: KubernetesSettings, options: ClusterReaderOptions, baseDir: string) {
    const { namespace, labelSelector, kubeconfig } = settings;
    if (namespace !== null && (typeof namespace !== 'string' || namespace.length > 63 || !DNS_LABEL.test(namespace))) {
      throw new SyncFailure(`cluster.kubernetes.namespace ${JSON.stringify(namespace)} is not a namespace name (lowercase letters, digits and "-", at most 63 characters)`);
    }
    if (labelSelector !== null && (typeof labelSelector !== 'string' || labelSelector.length > MAX_SELECTOR || /[\x00-\x1f\x7f]/.test(labelSelector))) {
      throw new SyncFailure(`cluster.kubernetes.labelSelector must be a label selector such as "registry=public" (at most ${MAX_SELECTOR} characters, no control characters)`);
    }
    const config = loadKubeConfig(kubeconfig === null ? null : resolve(baseDir, kubeconfig));
    this.#debounceMs = options.debounceMs ?? 250;
    this.#staleAfterMs = options.staleAfterMs ?? 120_000;
    this.#log = options.log ?? null;
    this.#watch = new ClusterWatch(new ClusterApi(config), { namespace, labelSelector: labelSelector === '' ? null : labelSelector }, {
      resource: options.resource,
      limits: options.watchLimits,
      log: this.#log,
      onChange: () => this.#changed(),
    });
    this.#watch.start();
  }

  onChange(listener: () => void): void {
    this.#listeners.push(listener);
  }

  async read(context: ReadContext): Promise<ReadOutcome> {
    if (this.#closed) throw new SyncFailure('the cluster reader is closed');
    await this.#watch.ready(context.signal);
    const state = this.#watch.state();
    if (!state.synced) throw new SyncFailure(`cannot list ${this.#watch.describe()}: ${state.error ?? 'the first list has not completed yet'}`);
    if (state.failingSince !== null && Date.now() - state.failingSince > this.#staleAfterMs) {
      throw new SyncFailure(`the cluster has not been followed since ${new Date(state.failingSince).toISOString()}: ${state.error}`);
    }
    const keys = [...state.resources.keys()].sort();
    return snapshot(
      keys.map((key) => ({ resource: state.resources.get(key)! })),
      context,
    );
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#listeners.length = 0;
    await this.#watch.close();
  }

  /** Changes within one debounce window make one call: a rollout touching many resources syncs once. */
  #changed(): void {
    if (this.#closed || this.#timer !== null) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      for (const listener of [...this.#listeners]) {
        try {
          listener();
        } catch (err) {
          this.#log?.error({ err }, 'a cluster source change listener failed');
        }
      }
    }, this.#debounceMs);
    this.#timer.unref();
  }
}

/**
 * The entries of `resources` (in order: for two resources of the same entry, the first wins),
 * sorted, with their digest; `unchanged` when it equals the last sync's.
 */
export function snapshot(resources: readonly { readonly resource: ClusterResource; readonly origin?: string }[], context: Pick<ReadContext, 'previous'>): ReadOutcome {
  const items = new Map<string, SyncItem & { claims: Readonly<Record<string, string>> }>();
  const skipped: string[] = [];
  for (const { resource, origin } of resources) {
    const mapped = mapClusterResource(resource, origin);
    if ('ignored' in mapped) continue;
    if ('problem' in mapped) {
      skipped.push(mapped.problem);
      continue;
    }
    const key = `${mapped.item.name}\u001f${mapped.item.version}`;
    if (items.has(key)) {
      skipped.push(`${mapped.item.name} version ${mapped.item.version}: defined again${origin === undefined ? '' : ` (${origin})`}; the first definition is kept`);
      continue;
    }
    items.set(key, mapped.item);
  }
  const sorted = [...items.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.version < b.version ? -1 : a.version > b.version ? 1 : 0));
  const named = skipped.length > MAX_SKIPPED ? [...skipped.slice(0, MAX_SKIPPED), `… and ${skipped.length - MAX_SKIPPED} more skipped resources`] : skipped;
  const digest = createHash('sha256')
    .update(JSON.stringify({ items: sorted.map((item) => [item.name, item.version, item.digest, Object.entries(item.claims).sort(([a], [b]) => (a < b ? -1 : 1))]), skipped: named }))
    .digest('base64url');
  if (context.previous?.digest === digest) return { type: 'unchanged' };
  return { type: 'snapshot', items: sorted, skipped: named, digest };
}
