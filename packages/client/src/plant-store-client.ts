import type { operations } from './generated/openapi.js';
import { PlantStoreError } from './plant-store-error.js';

type AddPlant = operations['addPlant'];

/** A plant as the store answers it: its name and tag, without its id. */
export type Plant = AddPlant['responses'][200]['content']['application/json'];

/**
 * A signed 64-bit plant id: a `bigint`, a string of decimal digits, or a
 * `number` only while it is a safe integer. Beyond 2^53 a `number` has already
 * lost digits (9007199254740993 is 9007199254740992 as a number), so such ids
 * must be a `bigint` or a string.
 */
export type PlantId = bigint | string | number;

/** The plant to create: the document's NewPlant, with an id that keeps its digits. */
export type NewPlant = Omit<AddPlant['requestBody']['content']['application/json'], 'id'> & { id: PlantId };

/** The part of `fetch` the client uses, so that any implementation fits (the global one by default). */
export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body: string; signal: AbortSignal },
) => Promise<{ status: number; statusText: string; headers: { get(name: string): string | null }; text(): Promise<string> }>;

export interface RetryOptions {
  /** Retries after the first attempt. Default 3. */
  retries?: number;
  /** The backoff before the first retry, doubled for each next one, in milliseconds. Default 100. */
  baseDelayMs?: number;
  /**
   * The longest backoff, in milliseconds, and the longest `Retry-After` the
   * client waits by itself; a longer one rejects with the 503, whose
   * `retryAfter` says when to try again. Default 5000.
   */
  maxDelayMs?: number;
}

export interface PlantStoreClientOptions {
  /** Where the service answers, such as `http://127.0.0.1:8080`; a path prefix is kept. */
  baseUrl: string | URL;
  /** An API token, made with `plantstore token create`. */
  token: string;
  /** The `fetch` to send with; the global one by default. */
  fetch?: FetchLike;
  /** How long one attempt may take, answer included, in milliseconds; then it counts as a network error. Default 30000. */
  timeoutMs?: number;
  /** How network errors and 503 answers are retried; `false` sends once. */
  retry?: RetryOptions | false;
}

export interface CallOptions {
  /** Aborts the call, a retry's wait included; the call then rejects with the signal's reason. */
  signal?: AbortSignal;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * A client of the plant store's HTTP API.
 *
 * Ids are written into the body with their exact digits. Network errors
 * (timeouts included) and 503 answers are retried with the same body, which
 * is safe because the id is the idempotency key: a plant stored by an attempt
 * whose answer was lost is answered 200 again. A 503 is retried after its
 * `Retry-After`; each retry waits a capped exponential backoff with full
 * jitter on top. No other answer is retried. Every error answer, and the
 * last network error or timeout, rejects with a `PlantStoreError`.
 */
export class PlantStoreClient {
  readonly #url: string;
  readonly #token: string;
  readonly #fetch: FetchLike;
  readonly #timeoutMs: number;
  readonly #retry: Required<RetryOptions>;

  constructor(options: PlantStoreClientOptions) {
    this.#url = `${String(options.baseUrl).replace(/\/+$/, '')}/plants`;
    new URL(this.#url); // a wrong base URL fails here, not at the first call
    if (typeof options.token !== 'string' || options.token === '') throw new TypeError('token must be a non-empty string');
    this.#token = options.token;
    this.#fetch = options.fetch ?? ((url, init) => fetch(url, init));
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    const retry = options.retry === false ? { retries: 0 } : (options.retry ?? {});
    this.#retry = { retries: retry.retries ?? 3, baseDelayMs: retry.baseDelayMs ?? 100, maxDelayMs: retry.maxDelayMs ?? 5000 };
  }

  /**
   * Creates a plant, or finds it already stored with the same name and tag,
   * and resolves the plant as stored. Rejects with a `RangeError` before
   * sending anything when the id is not a signed 64-bit integer (or is a
   * `number` beyond 2^53), with the signal's reason when `signal` aborts,
   * and with a `PlantStoreError` for anything else: an error answer, or no
   * answer after the last retry (`NETWORK_ERROR`, `TIMEOUT`).
   */
  async createPlant(plant: NewPlant, options: CallOptions = {}): Promise<Plant> {
    const body = newPlantJson(plant);
    const { signal } = options;
    for (let attempt = 0; ; attempt++) {
      signal?.throwIfAborted();
      const last = attempt >= this.#retry.retries;
      const answer = await this.#send(body, signal);
      if (answer instanceof PlantStoreError) {
        // No answer: the plant may or may not be stored, and the same body again settles it either way.
        if (last) throw answer;
        await delay(this.#backoff(attempt), signal);
        continue;
      }
      if (answer.status === 200) return JSON.parse(answer.text) as Plant;
      const error = PlantStoreError.fromAnswer(answer.status, answer.statusText, answer.retryAfter, answer.text);
      const retryAfterMs = (error.retryAfter ?? 0) * 1000;
      if (answer.status !== 503 || last || retryAfterMs > this.#retry.maxDelayMs) throw error;
      await delay(retryAfterMs + this.#backoff(attempt), signal);
    }
  }

  /**
   * One attempt, its answer read in full, within the attempt's time; the
   * error of an attempt that got no answer is returned, to retry or throw.
   * The caller's abort is thrown: it ends the call.
   */
  async #send(body: string, signal: AbortSignal | undefined): Promise<Answer | PlantStoreError> {
    const attempt = new AbortController();
    const abort = () => attempt.abort(signal?.reason);
    signal?.addEventListener('abort', abort, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      attempt.abort(new DOMException(`no answer within ${this.#timeoutMs} ms`, 'TimeoutError'));
    }, this.#timeoutMs);
    try {
      const response = await this.#fetch(this.#url, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.#token}`, 'content-type': 'application/json', accept: 'application/json' },
        body,
        signal: attempt.signal,
      });
      return { status: response.status, statusText: response.statusText, retryAfter: response.headers.get('retry-after'), text: await response.text() };
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      return PlantStoreError.noAnswer(this.#url, error, timedOut ? this.#timeoutMs : undefined);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', abort);
    }
  }

  /** Full jitter: anywhere from nothing to the capped exponential backoff. */
  #backoff(attempt: number): number {
    return Math.random() * Math.min(this.#retry.maxDelayMs, this.#retry.baseDelayMs * 2 ** attempt);
  }
}

interface Answer {
  status: number;
  statusText: string;
  retryAfter: string | null;
  text: string;
}

/** The request body, with the id's exact digits: `JSON.stringify` would throw on a bigint and round a number. */
function newPlantJson(plant: NewPlant): string {
  const { id, name, tag } = plant;
  if (typeof name !== 'string') throw new TypeError('name must be a string');
  if (tag !== undefined && typeof tag !== 'string') throw new TypeError('tag must be a string when given');
  const fields = [`"id":${idDigits(id)}`, `"name":${JSON.stringify(name)}`];
  if (tag !== undefined) fields.push(`"tag":${JSON.stringify(tag)}`);
  return `{${fields.join(',')}}`;
}

/** The decimal digits of a signed 64-bit id; a RangeError for anything else. */
function idDigits(id: PlantId): string {
  let value: bigint;
  if (typeof id === 'bigint') {
    value = id;
  } else if (typeof id === 'string') {
    if (!/^-?\d+$/.test(id)) throw new RangeError(`id must be a string of decimal digits, got ${JSON.stringify(id)}`);
    value = BigInt(id);
  } else if (typeof id === 'number') {
    if (!Number.isSafeInteger(id)) throw new RangeError(`id ${id} is not a safe integer: pass ids beyond 2^53 as a bigint or a decimal string`);
    value = BigInt(id);
  } else {
    throw new RangeError('id must be a bigint, a decimal string or a safe integer');
  }
  if (value < INT64_MIN || value > INT64_MAX) throw new RangeError(`id ${value} is not a signed 64-bit integer`);
  return value.toString();
}

/** Waits, or rejects with the signal's reason as soon as it aborts. */
function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', abort, { once: true });
  });
}
