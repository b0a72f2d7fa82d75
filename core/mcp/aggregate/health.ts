/**
 * Periodic health checks of an aggregated group's backends, for `/status` and the logs: each
 * check opens a session of its own (initialize), lists the tools (their count is part of the
 * status), and ends the session. A backend is unhealthy after `unhealthyThreshold` failed checks
 * in a row, healthy again after one good one. A backend that demands credentials (401/403)
 * answered, so it counts as up.
 */
import type { Logger } from 'pino';
import type { BackendLink } from './backend-link.ts';
import { SUPPORTED_VERSIONS } from './session.ts';

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
}

const CLIENT_INFO = { name: 'gatehouse-health-check', version: '1' };

export class HealthMonitor {
  readonly #links: readonly BackendLink[];
  readonly #status = new Map<string, BackendStatus>();
  readonly #intervalMs: number;
  readonly #threshold: number;
  readonly #log: Logger;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;

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

  /** One round of checks (concurrent rounds share the one in progress). */
  checkAll(): Promise<void> {
    this.#running ??= Promise.all(this.#links.map((link) => this.#check(link))).then(() => {
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
      const init = await link.call(null, null, {
        jsonrpc: '2.0',
        id: 'health',
        method: 'initialize',
        params: { protocolVersion: SUPPORTED_VERSIONS[0], capabilities: {}, clientInfo: CLIENT_INFO },
      });
      if (init.status === 401 || init.status === 403) {
        toolCount = null; // up, but our check has no credentials for it
      } else if (init.response?.result === undefined) {
        problem = link.problem(init, 'initialize')?.description ?? `initialize failed: ${init.response?.error?.message ?? `HTTP ${init.status}`}`;
      } else {
        const result = init.response.result as { protocolVersion?: string; capabilities?: Record<string, unknown> };
        const session = { sessionId: init.sessionId, protocolVersion: result.protocolVersion ?? SUPPORTED_VERSIONS[0], capabilities: result.capabilities ?? {} };
        await link.call(null, session, { jsonrpc: '2.0', method: 'notifications/initialized' });
        if (session.capabilities.tools !== undefined) {
          const tools = await link.call(null, session, { jsonrpc: '2.0', id: 'health-tools', method: 'tools/list', params: {} });
          const list = (tools.response?.result as { tools?: unknown[] } | undefined)?.tools;
          toolCount = Array.isArray(list) ? list.length : null;
        } else {
          toolCount = 0;
        }
        await link.remove(null, session).catch(() => undefined);
      }
    } catch (err) {
      problem = (err as { description?: string }).description ?? (err as Error).message;
    }
    const before = status.health;
    status.lastCheck = new Date().toISOString();
    status.latencyMs = Math.round(performance.now() - started);
    if (problem === null) {
      status.consecutiveFailures = 0;
      status.lastError = null;
      status.health = 'healthy';
      if (toolCount !== null) status.toolCount = toolCount;
    } else {
      status.consecutiveFailures++;
      status.lastError = problem;
      if (status.consecutiveFailures >= this.#threshold || before === 'unknown') status.health = 'unhealthy';
    }
    if (status.health !== before) {
      const log = status.health === 'healthy' ? this.#log.info.bind(this.#log) : this.#log.warn.bind(this.#log);
      log({ backend: link.name, health: status.health, error: status.lastError }, `backend ${link.name} is ${status.health}`);
    }
  }

  status(name: string): BackendStatus | undefined {
    return this.#status.get(name);
  }

  all(): BackendStatus[] {
    return [...this.#status.values()].map((s) => ({ ...s }));
  }
}
