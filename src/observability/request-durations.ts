import type { Registry } from 'prom-client';

type Labels = { route: string; method: string; status: number };

export class DurationSeries {
  readonly labels: Labels;
  readonly #bounds: readonly number[];
  /** Observations per bucket (not cumulative): counts[i] holds those above bounds[i - 1] and up to bounds[i]. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(labels: Labels, bounds: readonly number[]) {
    this.labels = labels;
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length);
  }

  observe(seconds: number): void {
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]!) i++;
    if (i < bounds.length) this.counts[i]! += 1;
    this.sum += seconds;
    this.count += 1;
  }
}

/** prom-client's Histogram, with the same series, buckets and lines, without its hashing and checking of the labels on every observation. */
export class RequestDurations {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #bounds: readonly number[];
  readonly #series: DurationSeries[] = [];
  /** Route, then method, then status: three map lookups cost less than building and hashing one key string. */
  readonly #byLabels = new Map<string, Map<string, Map<number, DurationSeries>>>();

  constructor(options: { name: string; help: string; buckets: readonly number[]; registers: readonly Registry[] }) {
    this.name = options.name;
    this.help = options.help;
    this.#bounds = [...options.buckets].sort((a, b) => a - b);
    for (const registry of options.registers) registry.registerMetric(this as never);
  }

  series(route: string, method: string, status: number): DurationSeries {
    let methods = this.#byLabels.get(route);
    if (methods === undefined) this.#byLabels.set(route, (methods = new Map()));
    let statuses = methods.get(method);
    if (statuses === undefined) methods.set(method, (statuses = new Map()));
    let found = statuses.get(status);
    if (found === undefined) {
      found = new DurationSeries({ route, method, status }, this.#bounds);
      statuses.set(status, found);
      this.#series.push(found);
    }
    return found;
  }

  /** What prom-client's registry formats: the values of prom-client's Histogram, in its order. */
  async getForPromString() {
    const bucket = `${this.name}_bucket`;
    const values: { labels: Record<string, string | number>; sharedLabels: Labels; value: number; metricName: string }[] = [];
    for (const series of this.#series) {
      let cumulative = 0;
      this.#bounds.forEach((le, i) => {
        cumulative += series.counts[i]!;
        values.push({ labels: { le }, sharedLabels: series.labels, value: cumulative, metricName: bucket });
      });
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: series.labels, value: series.count, metricName: bucket },
        { labels: {}, sharedLabels: series.labels, value: series.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: series.labels, value: series.count, metricName: `${this.name}_count` },
      );
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The same values with each series' labels merged into each value's, as prom-client's Histogram.get() gives them. */
  async get() {
    const metric = await this.getForPromString();
    return { ...metric, values: metric.values.map(({ labels, sharedLabels, ...value }) => ({ ...value, labels: { ...labels, ...sharedLabels } })) };
  }

  reset(): void {
    this.#series.length = 0;
    this.#byLabels.clear();
  }
}
