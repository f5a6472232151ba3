import type { Worker } from 'node:cluster';
import { EXIT } from './command-errors.js';
import type { Failure } from './failure.js';

/** What a worker of `--workers N` tells its primary of its start (why it failed, or its store's line): the primary says it once, not once per worker. */
export type WorkerReport =
  | { readonly plantstore: 'failed'; readonly failure: Failure }
  | { readonly plantstore: 'serving'; readonly note: string; readonly changed: boolean };

/** Sends `report` to the primary; resolves once it is written to the channel. */
export function tellPrimary(worker: Worker, report: WorkerReport): Promise<void> {
  return new Promise((resolve) => worker.send(report, undefined, () => resolve()));
}

/** The primary's side: its workers' reports, and the one line of them to say. */
export class WorkerReports {
  readonly #workers: number;
  readonly #stderr: NodeJS.WritableStream;
  #failure: Failure | undefined;
  readonly #serving: { note: string; changed: boolean }[] = [];

  constructor(workers: number, stderr: NodeJS.WritableStream) {
    this.#workers = workers;
    this.#stderr = stderr;
  }

  /** Takes a worker's report; once the first N workers serve, names the store, in the words of the one that made or migrated it, if one did. */
  received(message: unknown): void {
    const report = message as Partial<WorkerReport> | null;
    if (report?.plantstore === 'failed') this.#failure ??= (report as { failure: Failure }).failure;
    if (report?.plantstore !== 'serving' || this.#serving.length === this.#workers) return;
    this.#serving.push(report as { note: string; changed: boolean });
    if (this.#serving.length < this.#workers) return;
    const { note } = this.#serving.find((serving) => serving.changed) ?? this.#serving[0]!;
    this.#stderr.write(`plantstore: ${note}\n`);
  }

  /** Why a worker exited before it listened: its own report, or its exit code when it made none. */
  failure(code: number | null): Failure {
    return this.#failure ?? { message: `a worker exited with code ${code} before it listened`, exitCode: code === EXIT.usage ? EXIT.usage : EXIT.failed };
  }
}
