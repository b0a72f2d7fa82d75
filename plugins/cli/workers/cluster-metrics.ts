/**
 * `/metrics` with several workers: whichever worker a scrape reaches (on the admin listener,
 * which the workers share as they share the public port, or on the public port) answers the
 * metrics of every worker, summed, so that a counter never goes back when the next scrape lands
 * on another worker. The worker asks the primary; the primary asks every worker for its metrics
 * and sums them with prom-client's cluster aggregation (AggregatorRegistry: counters and
 * histograms summed, as Gatehouse's own families declare; prom-client's process metrics each as
 * it declares), and answers the one that asked.
 *
 * The override is of the registry's `metrics()`: what the server calls for every scrape
 * (core/server/gateway-server.ts); the worker's own part is `getMetricsAsJSON()`, unchanged.
 */
import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

const ASK = 'gatehouse:metrics-ask';
const ANSWER = 'gatehouse:metrics-answer';
/** How long a worker waits for the sum (prom-client's own wait for the workers is 5 s). */
const ANSWER_TIMEOUT_MS = 6_000;

interface Ask {
  readonly type: typeof ASK;
  readonly id: number;
}

interface Answer {
  readonly type: typeof ANSWER;
  readonly id: number;
  readonly text?: string;
  readonly error?: string;
}

const isAsk = (message: unknown): message is Ask => typeof message === 'object' && message !== null && (message as { type?: unknown }).type === ASK;
const isAnswer = (message: unknown): message is Answer => typeof message === 'object' && message !== null && (message as { type?: unknown }).type === ANSWER;

/** In a worker: `registry` is this worker's part of the sum, and its scrapes answer the sum. */
export function shareMetrics(registry: Registry): void {
  AggregatorRegistry.setRegistries([registry]);
  // Its construction makes the worker answer the primary's requests for its part.
  new AggregatorRegistry();
  const waiting = new Map<number, { resolve(text: string): void; reject(err: Error): void }>();
  let next = 0;
  process.on('message', (message: unknown) => {
    if (!isAnswer(message)) return;
    const asked = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.text !== undefined) asked?.resolve(message.text);
    else asked?.reject(new Error(`the workers' metrics could not be collected: ${message.error ?? 'no answer'}`));
  });
  registry.metrics = () =>
    new Promise<string>((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error(`the workers' metrics were not collected within ${ANSWER_TIMEOUT_MS} ms`));
      }, ANSWER_TIMEOUT_MS);
      waiting.set(id, {
        resolve: (text) => (clearTimeout(timer), resolve(text)),
        reject: (err) => (clearTimeout(timer), reject(err)),
      });
      const ask: Ask = { type: ASK, id };
      process.send?.(ask);
    });
}

/** In the primary: answers every worker that asks for the sum of the workers' metrics. */
export function sumMetricsForWorkers(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: unknown) => {
    if (!isAsk(message)) return;
    aggregator.clusterMetrics().then(
      (text) => answer(worker, { type: ANSWER, id: message.id, text }),
      (err: Error) => answer(worker, { type: ANSWER, id: message.id, error: err.message }),
    );
  });
}

function answer(worker: { isConnected(): boolean; send(message: Answer): unknown }, message: Answer): void {
  if (worker.isConnected()) worker.send(message);
}
