import type { SpanContext } from '@opentelemetry/api';
import { ServiceError } from '../errors.js';
import type { NewPlant } from './plant.js';
import type { CreateCallback, CreatePlantResult, PlantBatchWriter, CommitQueue } from './plant-writer.js';

export interface GroupCommitOptions {
  maxBatch: number;
  /** Past it a create is refused with 503 (OVERLOADED). */
  maxQueue: number;
  concurrency: number;
  onCommit?: (batchSize: number, seconds: number) => void;
  tracer?: CommitTracer;
}

export interface CommitTracer {
  /** The batch's span, or undefined when none of its requests is traced. */
  start(requests: readonly (SpanContext | undefined)[]): CommitTrace | undefined;
}

export interface CommitTrace {
  /** Each plant's request as a W3C `traceparent`. */
  readonly traceParents: readonly (string | undefined)[];
  end(error?: unknown): void;
}

interface Waiting {
  plant: NewPlant;
  done: CreateCallback;
  trace: SpanContext | undefined;
}

/**
 * Creates arriving while a transaction is in flight share the next one: one fsync answers them all, each once it committed.
 * No timer waits for company, so a lone request sees no added wait; the bounded queue refuses an overload.
 */
export class GroupCommit implements CommitQueue {
  readonly #store: PlantBatchWriter;
  readonly #options: GroupCommitOptions;
  #queue: Waiting[] = [];
  #inFlight = 0;
  #flushScheduled = false;
  #commits = 0;
  #whenIdle: (() => void)[] = [];

  constructor(store: PlantBatchWriter, options: GroupCommitOptions) {
    this.#store = store;
    this.#options = options;
  }

  add(plant: NewPlant, done: CreateCallback, trace?: SpanContext): void {
    if (this.#queue.length >= this.#options.maxQueue) {
      const overloaded = new ServiceError('OVERLOADED', { detail: `${this.#queue.length} plants are waiting to be written` });
      process.nextTick(done, overloaded);
      return;
    }
    this.#queue.push({ plant, done, trace });
    this.#schedule();
  }

  get commits(): number {
    return this.#commits;
  }

  get waiting(): number {
    return this.#queue.length;
  }

  /** Resolves once every create accepted so far has been answered. */
  drain(): Promise<void> {
    if (this.#queue.length === 0 && this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#whenIdle.push(resolve));
  }

  #schedule(): void {
    if (this.#flushScheduled || this.#inFlight >= this.#options.concurrency) return;
    this.#flushScheduled = true;
    // setImmediate runs after the I/O callbacks of this turn: every request already read joins the batch.
    setImmediate(this.#flush);
  }

  readonly #flush = (): void => {
    this.#flushScheduled = false;
    while (this.#inFlight < this.#options.concurrency && this.#queue.length > 0) {
      const batch = this.#queue.length <= this.#options.maxBatch ? this.#queue : this.#queue.slice(0, this.#options.maxBatch);
      this.#queue = batch === this.#queue ? [] : this.#queue.slice(this.#options.maxBatch);
      void this.#commit(batch);
    }
  };

  async #commit(batch: Waiting[]): Promise<void> {
    this.#inFlight += 1;
    this.#commits += 1;
    const started = process.hrtime.bigint();
    let results: CreatePlantResult[];
    const trace = this.#options.tracer?.start(batch.map((waiting) => waiting.trace));
    try {
      results = await this.#store.createPlants(
        batch.map((waiting) => waiting.plant),
        trace?.traceParents,
      );
      this.#options.onCommit?.(batch.length, Number(process.hrtime.bigint() - started) / 1e9);
      trace?.end();
    } catch (error) {
      // A failed transaction stored nothing of the batch: every request in it is told so.
      trace?.end(error);
      this.#settled();
      for (const waiting of batch) answer(waiting.done, error);
      return;
    }
    this.#settled();
    for (let i = 0; i < batch.length; i++) answer(batch[i]!.done, undefined, results[i]!);
  }

  #settled(): void {
    this.#inFlight -= 1;
    if (this.#queue.length > 0) this.#schedule();
    else if (this.#inFlight === 0) for (const resolve of this.#whenIdle.splice(0)) resolve();
  }
}

/** Calls `done`; should it throw (a defect), the rest of the batch is still answered and the error still surfaces. */
function answer(done: CreateCallback, error: unknown, result?: CreatePlantResult): void {
  try {
    done(error, result);
  } catch (thrown) {
    process.nextTick(() => {
      throw thrown;
    });
  }
}
