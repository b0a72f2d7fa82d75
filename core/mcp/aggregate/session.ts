/**
 * One aggregated session as this process holds it: the stored record (backend session ids),
 * plus what is rebuilt on demand and never stored — list caches, the routing of in-flight
 * requests and tasks, and the client's open GET stream.
 */
import type { JsonRpcId, JsonRpcMessage } from '../jsonrpc.ts';
import type { ListCache, ListKind } from './lists.ts';
import type { SessionRecord, BackendSessionRecord } from './session-store.ts';

/** What the session needs from the client's GET stream. */
export interface SessionStream {
  /** A backend's message for the client that did not come on the stream itself (fan-out calls). */
  deliver(backendIndex: number, message: JsonRpcMessage): void;
  close(): void;
}

export class AggregatedSession {
  #record: SessionRecord;
  /** Backend name → its session (only the backends that joined). */
  readonly #backends: Map<string, BackendSessionRecord>;
  readonly lists = new Map<ListKind, ListCache>();
  /** Client request id → index of the backend it was routed to (for notifications/cancelled). */
  readonly inflight = new Map<JsonRpcId, number>();
  /** Task id → backend index (tasks created by routed calls). */
  readonly tasks = new Map<string, number>();
  stream: SessionStream | null = null;
  /** Bumped on every list invalidation: pagination cursors carry it. */
  listVersion = 0;

  constructor(record: SessionRecord) {
    this.#record = record;
    this.#backends = new Map(Object.entries(record.backends));
  }

  get id(): string {
    return this.#record.id;
  }

  /** What the store holds for this session. */
  get record(): SessionRecord {
    return this.#record;
  }

  get backends(): ReadonlyMap<string, BackendSessionRecord> {
    return this.#backends;
  }

  /** A backend's session was re-created (it had lost the old one). */
  replaceBackend(name: string, backend: BackendSessionRecord): void {
    this.#backends.set(name, backend);
    this.#record = { ...this.#record, backends: { ...this.#record.backends, [name]: backend } };
    for (const kind of ['tools', 'prompts', 'resources'] as const) this.invalidate(kind);
  }

  invalidate(kind: ListKind): void {
    this.lists.delete(kind);
    if (kind === 'resources') this.lists.delete('resourceTemplates');
    this.listVersion++;
  }

  close(): void {
    this.stream?.close();
    this.stream = null;
  }
}

/** The protocol versions the gateway speaks in aggregated mode, newest first. */
export const SUPPORTED_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'] as const;

export function negotiateVersion(requested: unknown): string {
  return typeof requested === 'string' && (SUPPORTED_VERSIONS as readonly string[]).includes(requested) ? requested : SUPPORTED_VERSIONS[0];
}

type Capabilities = Record<string, unknown>;

function flag(caps: Capabilities, group: string, key: string): boolean {
  const value = caps[group];
  return typeof value === 'object' && value !== null && (value as Record<string, unknown>)[key] === true;
}

/**
 * The capabilities the client sees: the union of the backends'. list_changed is declared when
 * any backend declares it (the gateway forwards them); subscribe when any backend supports it.
 */
export function mergeCapabilities(backends: readonly Capabilities[]): Capabilities {
  const merged: Capabilities = {};
  const has = (group: string): boolean => backends.some((caps) => caps[group] !== undefined);
  const any = (group: string, key: string): boolean => backends.some((caps) => flag(caps, group, key));
  if (has('tools')) merged.tools = any('tools', 'listChanged') ? { listChanged: true } : {};
  if (has('prompts')) merged.prompts = any('prompts', 'listChanged') ? { listChanged: true } : {};
  if (has('resources')) {
    const resources: Record<string, boolean> = {};
    if (any('resources', 'subscribe')) resources.subscribe = true;
    if (any('resources', 'listChanged')) resources.listChanged = true;
    merged.resources = resources;
  }
  if (has('logging')) merged.logging = {};
  if (has('completions')) merged.completions = {};
  if (has('tasks')) merged.tasks = mergeObjects(backends.map((caps) => caps.tasks));
  if (has('experimental')) merged.experimental = mergeObjects(backends.map((caps) => caps.experimental));
  return merged;
}

function mergeObjects(values: unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const value of values) {
    if (typeof value !== 'object' || value === null) continue;
    for (const [key, inner] of Object.entries(value)) {
      const existing = out[key];
      out[key] =
        typeof existing === 'object' && existing !== null && typeof inner === 'object' && inner !== null
          ? mergeObjects([existing, inner])
          : (existing ?? inner);
    }
  }
  return out;
}

/** Instructions for the client: which servers are behind this endpoint, and which are missing. */
export function mergeInstructions(
  vmcpName: string,
  joined: readonly { name: string; instructions: unknown }[],
  missing: readonly { name: string; reason: string }[],
): string {
  const lines = [`"${vmcpName}" is a virtual MCP server aggregating: ${joined.map((b) => b.name).join(', ')}.`];
  if (missing.length > 0) {
    lines.push(`Unavailable when this session started (their tools are missing): ${missing.map((m) => `${m.name} (${m.reason})`).join('; ')}.`);
  }
  for (const backend of joined) {
    if (typeof backend.instructions === 'string' && backend.instructions.trim().length > 0) {
      lines.push('', `## ${backend.name}`, backend.instructions.trim());
    }
  }
  return lines.join('\n');
}
