/**
 * Counters and histograms for the request path: a child bound to its labels at start costs a
 * number increment (counter) or a short bucket scan (histogram) per observation, and becomes
 * Prometheus series only when /metrics is scraped. The families plug into prom-client's
 * Registry (its `registerMetric` takes any object with `name`, `help`, `type` and `get()`), so
 * exposition, content types and the process metrics stay prom-client's.
 */
type Labels = Record<string, string>;

interface Sample {
  metricName?: string;
  labels: Labels;
  value: number;
}

/** What prom-client's Registry reads from a metric when it renders /metrics. */
export interface Exposition {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  values: Sample[];
}

function labelsOf(names: readonly string[], values: readonly string[]): Labels {
  const labels: Labels = {};
  for (let i = 0; i < names.length; i++) labels[names[i]!] = values[i]!;
  return labels;
}

export class CounterChild {
  readonly labels: Labels;
  value = 0;
  constructor(labels: Labels) {
    this.labels = labels;
  }
  inc(by = 1): void {
    this.value += by;
  }
}

export class CounterFamily {
  readonly name: string;
  readonly help: string;
  readonly type = 'counter' as const;
  readonly aggregator = 'sum' as const;
  readonly #labelNames: readonly string[];
  readonly #children = new Map<string, CounterChild>();

  constructor(name: string, help: string, labelNames: readonly string[]) {
    this.name = name;
    this.help = help;
    this.#labelNames = labelNames;
  }

  /** The child for these label values: bind it once, keep it. */
  child(...values: string[]): CounterChild {
    const key = values.join('\u0000');
    let child = this.#children.get(key);
    if (child === undefined) {
      child = new CounterChild(labelsOf(this.#labelNames, values));
      this.#children.set(key, child);
    }
    return child;
  }

  get(): Exposition {
    const values: Sample[] = [];
    for (const child of this.#children.values()) values.push({ labels: child.labels, value: child.value });
    return { name: this.name, help: this.help, type: 'counter', aggregator: 'sum', values };
  }
}

export class HistogramChild {
  readonly labels: Labels;
  readonly #bounds: readonly number[];
  /** counts[i]: observations in bucket i (not cumulative); the last one is +Inf. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(labels: Labels, bounds: readonly number[]) {
    this.labels = labels;
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

export class HistogramFamily {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram' as const;
  readonly aggregator = 'sum' as const;
  readonly #labelNames: readonly string[];
  readonly #bounds: readonly number[];
  readonly #children = new Map<string, HistogramChild>();

  constructor(name: string, help: string, labelNames: readonly string[], bounds: readonly number[]) {
    this.name = name;
    this.help = help;
    this.#labelNames = labelNames;
    this.#bounds = bounds;
  }

  child(...values: string[]): HistogramChild {
    const key = values.join('\u0000');
    let child = this.#children.get(key);
    if (child === undefined) {
      child = new HistogramChild(labelsOf(this.#labelNames, values), this.#bounds);
      this.#children.set(key, child);
    }
    return child;
  }

  get(): Exposition {
    const values: Sample[] = [];
    for (const child of this.#children.values()) {
      let cumulative = 0;
      for (let i = 0; i <= this.#bounds.length; i++) {
        cumulative += child.counts[i]!;
        const le = i < this.#bounds.length ? String(this.#bounds[i]) : '+Inf';
        values.push({ metricName: `${this.name}_bucket`, labels: { ...child.labels, le }, value: cumulative });
      }
      values.push({ metricName: `${this.name}_sum`, labels: child.labels, value: child.sum });
      values.push({ metricName: `${this.name}_count`, labels: child.labels, value: child.count });
    }
    return { name: this.name, help: this.help, type: 'histogram', aggregator: 'sum', values };
  }
}
