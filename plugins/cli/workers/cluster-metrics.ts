/**
 * `/metrics` with several workers: whichever worker a scrape reaches (on the admin listener,
 * which the workers share as they share the public port, or on the public port) answers the
 * metrics of every worker, summed, so that a counter never goes back when the next scrape lands
 * on another worker. The worker asks the primary; the primary asks every worker that is ready
 * for its metrics (one still starting has served nothing, and may not answer yet) and sums them
 * with prom-client's cluster aggregation (`AggregatorRegistry.aggregate`: counters and
 * histograms summed, as Gatehouse's own families declare; prom-client's process metrics each as
 * it declares), and answers the one that asked.
 *
 * The override is of the registry's `metrics()`: what the server calls for every scrape
 * (core/server/gateway-server.ts); a worker's own part is `getMetricsAsJSON()`, unchanged.
 */
import type { Worker } from 'node:cluster';
import process from 'node:process';
import { AggregatorRegistry, type Registry } from 'prom-client';

/** A worker asks the primary for the sum. */
const ASK_SUM = 'gatehouse:metrics-ask-sum';
/** The primary answers it. */
const SUM = 'gatehouse:metrics-sum';
/** The primary asks a worker for its part. */
const ASK_PART = 'gatehouse:metrics-ask-part';
/** The worker answers it. */
const PART = 'gatehouse:metrics-part';
/** How long the primary waits for the workers' parts. */
const PARTS_TIMEOUT_MS = 5_000;
/** How long a worker waits for the sum. */
const SUM_TIMEOUT_MS = 6_000;

type Metrics = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

interface Message {
  readonly type: string;
  readonly id: number;
  readonly text?: string;
  readonly error?: string;
  readonly part?: Metrics;
}

const messageOf = (message: unknown, type: string): Message | null =>
  typeof message === 'object' && message !== null && (message as { type?: unknown }).type === type ? (message as Message) : null;

/** A call waiting for an answer by id, failed after `timeoutMs`. */
class Waiting<T> {
  readonly #calls = new Map<number, { resolve(value: T): void; reject(err: Error): void; timer: NodeJS.Timeout }>();
  #next = 0;

  start(timeoutMs: number, what: string, send: (id: number) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const id = this.#next++;
      const timer = setTimeout(() => this.settle(id, new Error(`${what} within ${timeoutMs} ms`)), timeoutMs);
      this.#calls.set(id, { resolve, reject, timer });
      send(id);
    });
  }

  settle(id: number, outcome: T | Error): void {
    const call = this.#calls.get(id);
    if (call === undefined) return;
    this.#calls.delete(id);
    clearTimeout(call.timer);
    if (outcome instanceof Error) call.reject(outcome);
    else call.resolve(outcome);
  }
}

/** In a worker: `registry` is this worker's part of the sum, and its scrapes answer the sum. */
export function shareMetrics(registry: Registry): void {
  const sums = new Waiting<string>();
  process.on('message', (message: unknown) => {
    const ask = messageOf(message, ASK_PART);
    if (ask !== null) {
      registry.getMetricsAsJSON().then(
        (part) => process.send?.({ type: PART, id: ask.id, part }),
        (err: Error) => process.send?.({ type: PART, id: ask.id, error: err.message }),
      );
      return;
    }
    const sum = messageOf(message, SUM);
    if (sum !== null) sums.settle(sum.id, sum.text ?? new Error(`the workers' metrics could not be collected: ${sum.error ?? 'no answer'}`));
  });
  registry.metrics = () => sums.start(SUM_TIMEOUT_MS, "the workers' metrics were not collected", (id) => process.send?.({ type: ASK_SUM, id }));
}

/** In the primary: answers every worker that asks for the sum of the `ready()` workers' metrics. */
export function sumMetricsForWorkers(ready: () => readonly Worker[]): (worker: Worker, message: unknown) => void {
  const parts = new Waiting<Metrics>();
  return (worker, message) => {
    const part = messageOf(message, PART);
    if (part !== null) return parts.settle(part.id, part.part ?? new Error(part.error ?? 'no metrics'));
    const ask = messageOf(message, ASK_SUM);
    if (ask === null) return;
    const asked = ready().map((w) => parts.start(PARTS_TIMEOUT_MS, `worker ${w.process.pid} sent no metrics`, (id) => w.send({ type: ASK_PART, id })));
    Promise.all(asked)
      .then((all) => AggregatorRegistry.aggregate(all).metrics())
      .then(
        (text) => answer(worker, { type: SUM, id: ask.id, text }),
        (err: Error) => answer(worker, { type: SUM, id: ask.id, error: err.message }),
      );
  };
}

function answer(worker: Worker, message: Message): void {
  if (worker.isConnected()) worker.send(message);
}
