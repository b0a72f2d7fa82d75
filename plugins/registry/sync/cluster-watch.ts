/**
 * The MCPServer resources of a Kubernetes cluster, kept current in memory: a list, then a watch
 * from the list's resourceVersion, the way client-go's reflector does it.
 *
 * - The watch asks for bookmarks and a server-side timeout; when the server ends it, it is opened
 *   again from the last resourceVersion seen.
 * - A resourceVersion the server no longer has (410 Gone, as an HTTP status or as an ERROR event;
 *   also an expired `continue` token while paging the list) means events were missed: list again.
 * - Any other failure (unreachable, 5xx, 403, a malformed event) is retried with an exponential
 *   back-off (with jitter); the last set stays, marked with the failure and since when.
 * - Memory is bounded: at most `maxResources` resources, each kept as the few fields the mapping
 *   reads (cluster-resource.ts), lists read a page at a time, and one event at most
 *   `maxEventBytes`. More resources than the bound is a failure (the set is then not trusted).
 *
 * `onChange` is called when the set changes in a way the mapping can see (a status update that
 * only touches conditions is not a change), and when a list succeeds after reads had failed.
 */
import type { Logger } from 'pino';
import { ClusterApiError, shorten } from './cluster-api.ts';
import type { ClusterApi } from './cluster-api.ts';
import type { ClusterResource } from './cluster-resource.ts';
import { slimResource } from './cluster-resource.ts';

/** The custom resource watched. */
export interface ResourceType {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
}

/** ToolHive's MCPServer custom resource. */
export const MCP_SERVER_RESOURCE: ResourceType = { group: 'toolhive.stacklok.dev', version: 'v1alpha1', plural: 'mcpservers' };

export interface ClusterWatchSettings {
  /** One namespace, or null for all. */
  readonly namespace: string | null;
  /** A Kubernetes label selector (`registry=public,tier!=test`), or null for every resource. */
  readonly labelSelector: string | null;
}

export interface WatchLimits {
  /** Resources held at most (default 10,000). */
  readonly maxResources: number;
  /** Items per list page (default 250). */
  readonly pageSize: number;
  /** Bytes of one list page (default 32 MiB). */
  readonly maxPageBytes: number;
  /** Bytes of one watch event (default 4 MiB: Kubernetes objects are at most about 1.5 MiB). */
  readonly maxEventBytes: number;
  /** Wait for the API server's answer to a request, and for a whole list page (default 30 s). */
  readonly requestTimeoutMs: number;
  /** How long the API server keeps one watch open (default 300 s, plus up to 10% jitter). */
  readonly watchTimeoutSeconds: number;
  /** A watch that sends nothing, not even a bookmark, for this long past its timeout is given up (default 60 s). */
  readonly watchGraceMs: number;
  /** First back-off after a failure (default 500 ms); it doubles up to `maxBackoffMs` (default 30 s). */
  readonly firstBackoffMs: number;
  readonly maxBackoffMs: number;
}

export const DEFAULT_WATCH_LIMITS: WatchLimits = {
  maxResources: 10_000,
  pageSize: 250,
  maxPageBytes: 32 * 1024 * 1024,
  maxEventBytes: 4 * 1024 * 1024,
  requestTimeoutMs: 30_000,
  watchTimeoutSeconds: 300,
  watchGraceMs: 60_000,
  firstBackoffMs: 500,
  maxBackoffMs: 30_000,
};

export interface ClusterWatchState {
  /** The set mirrors the cluster as of the last list and the events since (false before the first list, and after an overflow). */
  readonly synced: boolean;
  /** Resources by `namespace/name`. */
  readonly resources: ReadonlyMap<string, ClusterResource>;
  /** Why the API server cannot be followed right now, or null. */
  readonly error: string | null;
  /** When the current run of failures started (ms since the epoch), or null. */
  readonly failingSince: number | null;
}

export interface ClusterWatchOptions {
  readonly resource?: ResourceType;
  readonly limits?: Partial<WatchLimits>;
  readonly onChange: () => void;
  readonly log?: Logger | null;
}

/** The resourceVersion is gone: list again. */
class Gone extends Error {}

interface Held {
  readonly resource: ClusterResource;
  /** Its JSON: equal JSON is no change. */
  readonly json: string;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export class ClusterWatch {
  readonly #api: ClusterApi;
  readonly #settings: ClusterWatchSettings;
  readonly #resource: ResourceType;
  readonly #limits: WatchLimits;
  readonly #onChange: () => void;
  readonly #log: Logger | null;
  readonly #closing = new AbortController();
  #held = new Map<string, Held>();
  #resourceVersion: string | null = null;
  #synced = false;
  #error: string | null = null;
  #failingSince: number | null = null;
  #loop: Promise<void> | null = null;
  /** Resolved once the first list has succeeded or failed. */
  readonly #firstOutcome: Promise<void>;
  #settleFirst!: () => void;

  constructor(api: ClusterApi, settings: ClusterWatchSettings, options: ClusterWatchOptions) {
    this.#api = api;
    this.#settings = settings;
    this.#resource = options.resource ?? MCP_SERVER_RESOURCE;
    this.#limits = { ...DEFAULT_WATCH_LIMITS, ...options.limits };
    this.#onChange = options.onChange;
    this.#log = options.log ?? null;
    this.#firstOutcome = new Promise((resolve) => (this.#settleFirst = resolve));
  }

  start(): void {
    // #run handles its own failures; this only keeps a bug from becoming an unhandled rejection.
    this.#loop ??= this.#run().catch((err: unknown) => {
      this.#failed(err);
      this.#log?.error({ err, watch: this.describe() }, 'cluster watch stopped unexpectedly');
    });
  }

  /** Waits until the first list has succeeded or failed (or `signal` aborts). */
  async ready(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    let onAbort = (): void => {};
    const aborted = new Promise<void>((resolve) => {
      onAbort = () => resolve();
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      await Promise.race([this.#firstOutcome, aborted]);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  state(): ClusterWatchState {
    const resources = new Map<string, ClusterResource>();
    for (const [key, held] of this.#held) resources.set(key, held.resource);
    return { synced: this.#synced, resources, error: this.#error, failingSince: this.#failingSince };
  }

  /** What the watch follows, for messages: `mcpservers.toolhive.stacklok.dev/v1alpha1 in namespace x (labels a=b)`. */
  describe(): string {
    const { group, version, plural } = this.#resource;
    const where = this.#settings.namespace === null ? 'in all namespaces' : `in namespace ${this.#settings.namespace}`;
    const labels = this.#settings.labelSelector === null ? '' : ` with labels ${this.#settings.labelSelector}`;
    return `${plural}.${group}/${version} ${where}${labels}`;
  }

  /** Stops the watch and waits for its requests to end. */
  async close(): Promise<void> {
    this.#closing.abort();
    this.#settleFirst();
    await this.#loop;
  }

  // ---- the loop -----------------------------------------------------------------------------

  async #run(): Promise<void> {
    const signal = this.#closing.signal;
    let failures = 0;
    let gone = 0;
    while (!signal.aborted) {
      try {
        if (this.#resourceVersion === null) {
          await this.#list();
          this.#healthy();
          this.#settleFirst();
        }
        const started = Date.now();
        let events = 0;
        await this.#watchOnce(() => events++);
        // A watch the server ends at once, again and again, must not become a busy loop.
        if (events === 0 && Date.now() - started < 1000) throw new ClusterApiError(`the API server ended the watch of ${this.describe()} at once`, null);
        failures = 0;
        gone = 0;
      } catch (err) {
        if (signal.aborted) break;
        if (err instanceof Gone) {
          this.#resourceVersion = null;
          this.#log?.info({ watch: this.describe(), reason: err.message }, 'cluster watch: resourceVersion expired, listing again');
          // The first time, list again at once; a server that keeps answering 410 gets the back-off.
          if (++gone === 1) continue;
        } else {
          this.#failed(err);
        }
        failures++;
        await sleep(this.#backoff(failures), signal);
      }
    }
  }

  #backoff(failures: number): number {
    const { firstBackoffMs, maxBackoffMs } = this.#limits;
    const base = Math.min(maxBackoffMs, firstBackoffMs * 2 ** Math.min(failures - 1, 20));
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }

  #healthy(): void {
    if (this.#error !== null) this.#log?.info({ watch: this.describe() }, 'cluster watch: the API server answers again');
    this.#error = null;
    this.#failingSince = null;
  }

  #failed(err: unknown): void {
    const message = err instanceof ClusterApiError ? err.message : `unexpected failure: ${shorten((err as Error)?.message ?? String(err))}`;
    if (this.#error !== message) this.#log?.warn({ watch: this.describe(), reason: message }, 'cluster watch failed: retrying with back-off');
    this.#error = message;
    this.#failingSince ??= Date.now();
    this.#settleFirst();
  }

  #path(): string {
    const { group, version, plural } = this.#resource;
    const namespace = this.#settings.namespace;
    return namespace === null ? `/apis/${group}/${version}/${plural}` : `/apis/${group}/${version}/namespaces/${encodeURIComponent(namespace)}/${plural}`;
  }

  #selector(): Record<string, string> {
    return this.#settings.labelSelector === null ? {} : { labelSelector: this.#settings.labelSelector };
  }

  /** Lists every resource (page by page) and replaces the set. */
  async #list(): Promise<void> {
    const { pageSize, maxPageBytes, requestTimeoutMs, maxResources } = this.#limits;
    const listed = new Map<string, Held>();
    let token: string | null = null;
    let resourceVersion: string | null = null;
    let restarts = 0;
    for (;;) {
      const query: Record<string, string> = { ...this.#selector(), limit: String(pageSize) };
      if (token !== null) query.continue = token;
      let page: unknown;
      try {
        page = await this.#api.getJson(this.#path(), query, { signal: this.#closing.signal, timeoutMs: requestTimeoutMs, maxBytes: maxPageBytes });
      } catch (err) {
        // The continue token expired between pages: start over (a consistent list needs one snapshot).
        if (err instanceof ClusterApiError && err.status === 410 && token !== null && restarts++ < 3) {
          listed.clear();
          token = null;
          resourceVersion = null;
          continue;
        }
        if (err instanceof ClusterApiError && err.status === 404) {
          throw new ClusterApiError(`${err.message} (is the MCPServer custom resource definition, ${this.#resource.plural}.${this.#resource.group}/${this.#resource.version}, installed?)`, 404);
        }
        throw err;
      }
      if (!isObject(page) || !Array.isArray(page.items) || !isObject(page.metadata)) throw new ClusterApiError(`the API server's list of ${this.describe()} is not a Kubernetes list`, null);
      for (const item of page.items) {
        const key = keyOf(item);
        if (key === null) throw new ClusterApiError(`the API server's list of ${this.describe()} holds an item without metadata.name`, null);
        if (!listed.has(key) && listed.size >= maxResources) {
          this.#overflow();
          throw new ClusterApiError(`there are more than ${maxResources} ${this.describe()}: narrow the source with a namespace or a label selector`, null);
        }
        const resource = slimResource(item as Record<string, unknown>);
        listed.set(key, { resource, json: JSON.stringify(resource) });
      }
      resourceVersion = typeof page.metadata.resourceVersion === 'string' ? page.metadata.resourceVersion : null;
      token = typeof page.metadata.continue === 'string' && page.metadata.continue !== '' ? page.metadata.continue : null;
      if (token === null) break;
    }
    if (resourceVersion === null || resourceVersion === '') throw new ClusterApiError(`the API server's list of ${this.describe()} has no resourceVersion`, null);

    // The first list answers the read waiting for it: no change to announce, unless reads failed
    // before it (a first list that failed, an overflow), whose sources must now sync again.
    const differs = listed.size !== this.#held.size || [...listed].some(([key, held]) => this.#held.get(key)?.json !== held.json);
    const changed = this.#synced ? differs : this.#error !== null;
    this.#held = listed;
    this.#resourceVersion = resourceVersion;
    this.#synced = true;
    if (changed) this.#onChange();
  }

  /** The set can no longer be trusted to mirror the cluster. */
  #overflow(): void {
    this.#synced = false;
    this.#resourceVersion = null;
  }

  /** One watch connection, from the current resourceVersion until the server ends it. */
  async #watchOnce(onEvent: () => void): Promise<void> {
    const { watchTimeoutSeconds, watchGraceMs, requestTimeoutMs, maxEventBytes } = this.#limits;
    // Jitter spreads the reconnections of many replicas.
    const timeoutSeconds = Math.max(1, Math.round(watchTimeoutSeconds * (1 + Math.random() * 0.1)));
    const query: Record<string, string> = { ...this.#selector(), resourceVersion: this.#resourceVersion!, allowWatchBookmarks: 'true', timeoutSeconds: String(timeoutSeconds) };
    try {
      await this.#api.watch(
        this.#path(),
        query,
        { signal: this.#closing.signal, timeoutMs: requestTimeoutMs, maxLineBytes: maxEventBytes, idleTimeoutMs: timeoutSeconds * 1000 + watchGraceMs },
        {
          onConnected: () => this.#healthy(),
          onLine: (line) => {
            this.#event(line);
            onEvent();
          },
        },
      );
    } catch (err) {
      if (err instanceof ClusterApiError && err.status === 410) throw new Gone(err.message);
      throw err;
    }
  }

  #event(line: string): void {
    let event: unknown;
    try {
      event = JSON.parse(line);
    } catch {
      throw new ClusterApiError(`the watch of ${this.describe()} sent an event that is not JSON`, null);
    }
    if (!isObject(event) || typeof event.type !== 'string' || !isObject(event.object)) throw new ClusterApiError(`the watch of ${this.describe()} sent an event without type and object`, null);
    const object = event.object;
    if (event.type === 'ERROR') {
      // The object is a Status: 410 when the resourceVersion is too old.
      const code = typeof object.code === 'number' ? object.code : null;
      const message = typeof object.message === 'string' ? shorten(object.message) : 'no message';
      if (code === 410) throw new Gone(message);
      throw new ClusterApiError(`the watch of ${this.describe()} failed${code === null ? '' : ` (${code})`}: ${message}`, code);
    }
    const resourceVersion = isObject(object.metadata) && typeof object.metadata.resourceVersion === 'string' ? object.metadata.resourceVersion : null;
    if (event.type === 'BOOKMARK') {
      if (resourceVersion !== null) this.#resourceVersion = resourceVersion;
      return;
    }
    const key = keyOf(object);
    if (key === null) throw new ClusterApiError(`the watch of ${this.describe()} sent a ${event.type} event without metadata.name`, null);
    if (event.type === 'ADDED' || event.type === 'MODIFIED') {
      const resource = slimResource(object);
      const json = JSON.stringify(resource);
      const before = this.#held.get(key);
      if (before === undefined && this.#held.size >= this.#limits.maxResources) {
        this.#overflow();
        throw new ClusterApiError(`there are more than ${this.#limits.maxResources} ${this.describe()}: narrow the source with a namespace or a label selector`, null);
      }
      this.#held.set(key, { resource, json });
      if (before?.json !== json) this.#onChange();
    } else if (event.type === 'DELETED') {
      if (this.#held.delete(key)) this.#onChange();
    } else {
      throw new ClusterApiError(`the watch of ${this.describe()} sent an event of unknown type ${JSON.stringify(shorten(event.type, 40))}`, null);
    }
    if (resourceVersion !== null) this.#resourceVersion = resourceVersion;
  }
}

/** `namespace/name` of a Kubernetes object, or null when it has no name. */
function keyOf(object: unknown): string | null {
  if (!isObject(object) || !isObject(object.metadata)) return null;
  const { name, namespace } = object.metadata;
  if (typeof name !== 'string' || name === '') return null;
  return `${typeof namespace === 'string' ? namespace : ''}/${name}`;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
