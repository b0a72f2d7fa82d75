/**
 * The SSE streams open to clients: counted for metrics, and closed at shutdown (standalone GET
 * streams at once, streams answering a request after the grace period).
 */
import type { ShutdownHook } from '../server/gateway-server.ts';
import type { GatewayMetrics } from '../observe/metrics.ts';

export interface OpenStream {
  /** A GET stream: not part of any request, ended at once on shutdown. */
  readonly standalone: boolean;
  /** Ends the client's stream cleanly and stops the backend exchange. */
  close(): void;
}

export class OpenStreams implements ShutdownHook {
  readonly #streams = new Set<OpenStream>();
  readonly #metrics: GatewayMetrics;

  constructor(metrics: GatewayMetrics) {
    this.#metrics = metrics;
  }

  add(stream: OpenStream): void {
    this.#streams.add(stream);
    this.#metrics.streams++;
  }

  delete(stream: OpenStream): void {
    if (this.#streams.delete(stream)) this.#metrics.streams--;
  }

  get size(): number {
    return this.#streams.size;
  }

  /** Shutdown, first step: the standalone streams end (they never would), the others finish. */
  drain(): void {
    for (const stream of [...this.#streams]) if (stream.standalone) stream.close();
  }

  /** Shutdown, after the grace period: every stream ends. */
  abort(): void {
    for (const stream of [...this.#streams]) stream.close();
  }
}
