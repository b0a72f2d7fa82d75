/**
 * Prometheus metrics, served at `/metrics`: request counts and latency per route, backend
 * latency and outcomes per backend, time per plugin phase, in-flight requests and open SSE
 * streams, plus Node's process metrics. The request-path families are fast-metrics.ts children
 * bound once; the rest is prom-client.
 */
import client, { type Registry } from 'prom-client';
import { CounterFamily, HistogramFamily, type CounterChild, type HistogramChild } from './fast-metrics.ts';
import { redisConnections } from './redis-health.ts';
import { requestEnd } from './channels.ts';
import type { RequestRecord } from './request-record.ts';

export type Observe = (seconds: number) => void;

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const PHASE_BUCKETS = [0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.005, 0.025, 0.1, 1];

/** Per-route request metrics: one counter child per status seen, the duration child bound once. */
export class RouteMetrics {
  /** The route's label: `mcp`, `builtin`, `not_found`, a plugin route's path. */
  readonly name: string;
  readonly #route: string;
  readonly #requests: CounterFamily;
  readonly #byStatus = new Map<number, CounterChild>();
  readonly #duration: HistogramChild;

  constructor(route: string, requests: CounterFamily, duration: HistogramFamily) {
    this.name = route;
    this.#route = route;
    this.#requests = requests;
    this.#duration = duration.child(route);
  }

  record(status: number, seconds: number): void {
    let counter = this.#byStatus.get(status);
    if (counter === undefined) {
      counter = this.#requests.child(this.#route, String(status));
      this.#byStatus.set(status, counter);
    }
    counter.value++;
    this.#duration.observe(seconds);
  }
}

/** Per-backend metrics: time to response headers, and outcomes. */
export class BackendMetrics {
  readonly #latency: HistogramChild;
  readonly #ok: CounterChild;
  readonly #outcomes: CounterFamily;
  readonly #name: string;

  constructor(name: string, latency: HistogramFamily, outcomes: CounterFamily) {
    this.#name = name;
    this.#latency = latency.child(name);
    this.#outcomes = outcomes;
    this.#ok = outcomes.child(name, 'ok');
  }

  /** The backend answered (any HTTP status) after `seconds`. */
  ok(seconds: number): void {
    this.#latency.observe(seconds);
    this.#ok.value++;
  }

  /** `unavailable`, `timeout`, `error`, `aborted`, or `limited` (a stream the gateway's stream limit refused). */
  outcome(outcome: string): void {
    this.#outcomes.child(this.#name, outcome).value++;
  }
}

export class GatewayMetrics {
  readonly registry: Registry;
  readonly #requests = new CounterFamily('gatehouse_requests_total', 'HTTP requests answered, by route and status', ['route', 'status']);
  readonly #duration = new HistogramFamily(
    'gatehouse_request_duration_seconds',
    'Time from request to the end of the response (SSE streams: their whole life), by route',
    ['route'],
    LATENCY_BUCKETS,
  );
  readonly #backendLatency = new HistogramFamily('gatehouse_backend_response_seconds', 'Time until a backend sent its response headers, by backend', ['backend'], LATENCY_BUCKETS);
  readonly #backendOutcomes = new CounterFamily('gatehouse_backend_requests_total', 'Requests sent to backends, by backend and outcome', ['backend', 'outcome']);
  readonly #phase = new HistogramFamily('gatehouse_plugin_phase_seconds', 'Time spent in each plugin hook, by plugin and phase', ['plugin', 'phase'], PHASE_BUCKETS);
  readonly #limited = new CounterFamily(
    'gatehouse_limit_refusals_total',
    'Connections and requests refused or dropped at a limit of server (max_connections, session_requests, stream_buffer, send_timeout)',
    ['limit'],
  );
  readonly #rateLimited = new CounterFamily(
    'gatehouse_rate_limited_total',
    'MCP requests refused by spec.config.rateLimiting, by the bucket that refused (scope: shared, perUser, perClient; target: server, tool, backend)',
    ['scope', 'target'],
  );
  readonly #routes = new Map<string, RouteMetrics>();
  /** Plain counters, read by the gauges at scrape time (no metric call per request). */
  inflight = 0;
  streams = 0;
  /** Open client connections, asked at scrape time (the server sets it when it listens). */
  connections: (() => number) | null = null;

  constructor(options: { processMetrics?: boolean } = {}) {
    const registry = new client.Registry();
    this.registry = registry;
    if (options.processMetrics !== false) client.collectDefaultMetrics({ register: registry, prefix: 'gatehouse_' });
    for (const family of [this.#requests, this.#duration, this.#backendLatency, this.#backendOutcomes, this.#phase, this.#limited, this.#rateLimited]) {
      registry.registerMetric(family as never);
    }
    const metrics = this;
    new client.Gauge({
      name: 'gatehouse_requests_in_flight',
      help: 'Requests being served (SSE streams included)',
      registers: [registry],
      collect() {
        this.set(metrics.inflight);
      },
    });
    // Redis connections (sessions, the authorization server): read at scrape time.
    new client.Gauge({
      name: 'gatehouse_redis_up',
      help: 'Whether each Redis connection is connected and ready (Sentinel: to the master), by connection',
      labelNames: ['connection'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [name, health] of redisConnections()) this.set({ connection: name }, health.up ? 1 : 0);
      },
    });
    for (const [field, name, help] of [
      ['errors', 'gatehouse_redis_errors_total', 'Errors each Redis connection reported (connection, command, sentinel), by connection'],
      ['reconnects', 'gatehouse_redis_reconnects_total', 'Times each Redis connection became ready again after losing its connection, by connection'],
      ['switches', 'gatehouse_redis_master_switches_total', 'Sentinel master switches each Redis connection followed, by connection'],
    ] as const) {
      // A counter read from the connections' own tallies (prom-client counters cannot be set).
      new client.Gauge({
        name,
        help,
        labelNames: ['connection'],
        registers: [registry],
        collect() {
          this.reset();
          for (const [connection, health] of redisConnections()) this.set({ connection }, health[field]);
        },
      });
    }
    new client.Gauge({
      name: 'gatehouse_connections_open',
      help: 'Client connections open on the public listener',
      registers: [registry],
      collect() {
        this.set(metrics.connections?.() ?? 0);
      },
    });
    new client.Gauge({
      name: 'gatehouse_sse_streams_open',
      help: 'SSE streams open to clients',
      registers: [registry],
      collect() {
        this.set(metrics.streams);
      },
    });
  }

  /** A connection or request refused or dropped at one of server's limits. */
  limited(limit: 'max_connections' | 'session_requests' | 'stream_buffer' | 'send_timeout'): void {
    this.#limited.child(limit).value++;
  }

  /** The counter of requests a rate limit refused, for one bucket kind (bound once, when the limits are built). */
  rateLimited(scope: 'shared' | 'perUser' | 'perClient', target: 'server' | 'tool' | 'backend'): CounterChild {
    return this.#rateLimited.child(scope, target);
  }

  /** The metrics of one route (one instance per name: the request seam finds it by its label). */
  route(name: string): RouteMetrics {
    let route = this.#routes.get(name);
    if (route === undefined) {
      route = new RouteMetrics(name, this.#requests, this.#duration);
      this.#routes.set(name, route);
    }
    return route;
  }

  /**
   * Records the requests `server` ends, as a subscriber of the request seam (`gatehouse:request:end`),
   * until the returned function is called. A request that matched no route is not counted.
   */
  observeRequests(server: object): () => void {
    const onEnd = (message: unknown): void => {
      const record = message as RequestRecord;
      if (record.server !== server || record.routeLabel === '') return;
      this.#routes.get(record.routeLabel)?.record(record.status, record.seconds);
    };
    requestEnd.subscribe(onEnd);
    return () => {
      requestEnd.unsubscribe(onEnd);
    };
  }

  backend(name: string): BackendMetrics {
    return new BackendMetrics(name, this.#backendLatency, this.#backendOutcomes);
  }

  /** The observer for one plugin's phase, bound once when the chain is compiled. */
  readonly phaseTimer = (plugin: string, phase: string): Observe => {
    const child = this.#phase.child(plugin, phase);
    return (seconds) => child.observe(seconds);
  };
}
