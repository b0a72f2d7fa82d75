/**
 * The health of an aggregated group's backends, for `/status`, the logs and the sessions. Two
 * sources: periodic checks (each opens a session of its own, lists the tools, whose count is
 * part of the status, and ends the session) and what the sessions' own requests see (a backend
 * that refuses connections or fails with a 5xx while sessions use it is failing, whatever the
 * last check said). A backend is unhealthy after `unhealthyThreshold` failures in a row, healthy
 * again after one success. A backend that demands credentials (401/403) answered, so it counts as
 * up. Sessions that gave up on a backend try it again at once when it turns healthy.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { LEGACY_VERSIONS } from '../../protocol/era.ts';
import type { BackendLink } from './backend-link.ts';
import { BackendProfiles, modernRecord } from './profiles.ts';

export type Health = 'unknown' | 'healthy' | 'unhealthy';

export interface BackendStatus {
  name: string;
  url: string;
  health: Health;
  consecutiveFailures: number;
  lastCheck: string | null;
  lastError: string | null;
  latencyMs: number | null;
  toolCount: number | null;
  /** The generation of MCP it speaks, once a check or a request found out. */
  era: 'modern' | 'legacy' | 'unknown';
}

const CLIENT_INFO = { name: 'gatehouse-health-check', version: '1' };

export class HealthMonitor {
  /** Each backend's era, learnt by the checks (and by the first request that needs it). */
  readonly profiles = new BackendProfiles();
  readonly #links: readonly BackendLink[];
  readonly #status = new Map<string, BackendStatus>();
  readonly #intervalMs: number;
  readonly #threshold: number;
  readonly #log: Logger;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  /** performance.now() of each backend's last turn to healthy. */
  readonly #recoveredAt = new Map<string, number>();
  readonly #onRecovered: ((name: string) => void)[] = [];

  constructor(links: readonly BackendLink[], intervalMs: number, threshold: number, log: Logger) {
    this.#links = links;
    this.#intervalMs = intervalMs;
    this.#threshold = threshold;
    this.#log = log;
    for (const link of links) {
      this.#status.set(link.name, {
        name: link.name,
        url: link.backend.url.href,
        health: 'unknown',
        consecutiveFailures: 0,
        lastCheck: null,
        lastError: null,
        latencyMs: null,
        toolCount: null,
        era: 'unknown',
      });
    }
  }

  start(): void {
    if (this.#intervalMs <= 0) return;
    void this.checkAll();
    this.#timer = setInterval(() => void this.checkAll(), this.#intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  /**
   * One round of checks (concurrent rounds share the one in progress). A stdio backend is not
   * checked so: a check would start a process each time (an `npx` download, a second of CPU);
   * its health is what the sessions' requests see, and its transport's own backoff after a
   * process that fails to start.
   */
  checkAll(): Promise<void> {
    this.#running ??= Promise.all(this.#links.map((link) => (link.backend.transport.kind === 'stdio' ? undefined : this.#check(link)))).then(() => {
      this.#running = null;
    });
    return this.#running;
  }

  async #check(link: BackendLink): Promise<void> {
    const status = this.#status.get(link.name)!;
    const started = performance.now();
    let problem: string | null = null;
    let toolCount: number | null = null;
    try {
      const profile = await this.profiles.probe(null, link, true);
      if (profile?.era === 'modern') {
        // Stateless: one tools/list is the whole check.
        toolCount = 0;
        if (profile.capabilities['tools'] !== undefined) {
          const tools = await link.call(null, modernRecord(profile), { jsonrpc: '2.0', id: 'health-tools', method: 'tools/list', params: {} });
          const list = (tools.response?.result as { tools?: unknown[] } | undefined)?.tools;
          if (tools.status >= 500) problem = `tools/list failed: HTTP ${tools.status}`;
          toolCount = Array.isArray(list) ? list.length : null;
        }
      } else {
        ({ problem, toolCount } = await this.#legacyCheck(link));
      }
    } catch (err) {
      problem = (err as { description?: string }).description ?? (err as Error).message;
    }
    status.lastCheck = new Date().toISOString();
    status.latencyMs = Math.round(performance.now() - started);
    if (problem === null && toolCount !== null) status.toolCount = toolCount;
    this.#record(status, problem, 'health check');
  }

  /** A legacy backend's check: a session of its own, its tool count, the session ended. */
  async #legacyCheck(link: BackendLink): Promise<{ problem: string | null; toolCount: number | null }> {
    const init = await link.call(null, null, {
      jsonrpc: '2.0',
      id: 'health',
      method: 'initialize',
      params: { protocolVersion: LEGACY_VERSIONS[0], capabilities: {}, clientInfo: CLIENT_INFO },
    });
    // Up, but the check has no credentials for it.
    if (init.status === 401 || init.status === 403) return { problem: null, toolCount: null };
    if (init.response?.result === undefined) {
      return { problem: link.problem(init, 'initialize')?.description ?? `initialize failed: ${init.response?.error?.message ?? `HTTP ${init.status}`}`, toolCount: null };
    }
    const result = init.response.result as { protocolVersion?: string; capabilities?: Record<string, unknown> };
    const session = { sessionId: init.sessionId, protocolVersion: result.protocolVersion ?? LEGACY_VERSIONS[0]!, capabilities: result.capabilities ?? {} };
    await link.call(null, session, { jsonrpc: '2.0', method: 'notifications/initialized' });
    let toolCount: number | null = 0;
    if (session.capabilities.tools !== undefined) {
      const tools = await link.call(null, session, { jsonrpc: '2.0', id: 'health-tools', method: 'tools/list', params: {} });
      const list = (tools.response?.result as { tools?: unknown[] } | undefined)?.tools;
      toolCount = Array.isArray(list) ? list.length : null;
    }
    await link.remove(null, session).catch(() => undefined);
    return { problem: null, toolCount };
  }

  /**
   * What a session's request to backend `name` saw: null when it answered, else the problem (it
   * could not be reached, timed out, or failed with a 5xx). Costs one comparison when nothing
   * changes.
   */
  observe(name: string, problem: string | null): void {
    const status = this.#status.get(name);
    if (status === undefined || (problem === null && status.health === 'healthy' && status.consecutiveFailures === 0)) return;
    this.#record(status, problem, 'session traffic');
  }

  #record(status: BackendStatus, problem: string | null, source: string): void {
    const before = status.health;
    if (problem === null) {
      status.consecutiveFailures = 0;
      status.lastError = null;
      status.health = 'healthy';
    } else {
      status.consecutiveFailures++;
      status.lastError = problem;
      if (status.consecutiveFailures >= this.#threshold || before === 'unknown') status.health = 'unhealthy';
    }
    if (status.health === before) return;
    const name = status.name;
    if (status.health === 'healthy') {
      this.#log.info({ backend: name, health: status.health, source }, `backend ${name} is healthy`);
      this.#recoveredAt.set(name, performance.now());
      for (const listener of this.#onRecovered) listener(name);
    } else {
      this.#log.warn({ backend: name, health: status.health, error: status.lastError, source }, `backend ${name} is ${status.health}`);
    }
  }

  /** Whether backend `name` turned healthy after `since` (a performance.now() time). */
  recoveredSince(name: string, since: number): boolean {
    return (this.#recoveredAt.get(name) ?? -Infinity) > since;
  }

  /** Calls `listener(name)` each time a backend turns healthy. Listeners must not throw. */
  onRecovered(listener: (name: string) => void): void {
    this.#onRecovered.push(listener);
  }

  status(name: string): BackendStatus | undefined {
    const status = this.#status.get(name);
    return status === undefined ? undefined : this.#withEra(status);
  }

  all(): BackendStatus[] {
    return [...this.#status.values()].map((s) => this.#withEra(s));
  }

  #withEra(status: BackendStatus): BackendStatus {
    const link = this.#links.find((l) => l.name === status.name);
    return { ...status, era: (link === undefined ? undefined : this.profiles.known(link)?.era) ?? 'unknown' };
  }
}
