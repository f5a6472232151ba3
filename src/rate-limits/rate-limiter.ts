import type { BucketReturn, RateLimitStore } from '../store/rate-limit-store.js';
import { type RatePolicy, samePolicy } from './rate-policy.js';

/** A client's quota is taken from the store in this many slices at most: a write per slice, never one per create. */
export const SLICES_PER_QUOTA = 50;
export const LONGEST_HOLD_MS = 1000;
/** Past it the client remembered longest is forgotten, its slice given back. */
export const MOST_CLIENTS = 20_000;
export const IDLE_MS = 10_000;
const SWEEP_MS = 250;
const PRUNE_MS = 60_000;

/** The RateLimit fields of an answer (draft-ietf-httpapi-ratelimit-headers-10), and Retry-After on a refusal. */
export type RateLimitHeaders = Record<string, string>;

export interface RateDecision {
  readonly allowed: boolean;
  readonly policy: RatePolicy;
  readonly headers: RateLimitHeaders;
  readonly retryAfterSeconds: number;
}

interface Client {
  policy: RatePolicy;
  held: number;
  heldUntil: number;
  left: number;
  seenAt: number;
  /** The bucket was found empty: until then the client is refused without asking the store. */
  emptyUntil: number;
  lease: Promise<void> | undefined;
  usedAt: number;
}

/**
 * One quota a client across every process: a token bucket in the store (RateLimitStore), of which a process takes a
 * slice, answers creates from it in memory and gives back what it has not used within LONGEST_HOLD_MS. A refused create
 * takes nothing; an allowed one takes a unit whatever the store then answers. A bucket full again is deleted.
 */
export class RateLimiter {
  readonly #store: RateLimitStore;
  readonly #now: () => number;
  readonly #onError: (error: unknown) => void;
  readonly #mostClients: number;
  readonly #clients = new Map<string, Client>();
  #returns: BucketReturn[] = [];
  #sweeper: NodeJS.Timeout | undefined;
  #nextPrune = 0;

  constructor(store: RateLimitStore, options: { now?: () => number; onError: (error: unknown) => void; mostClients?: number }) {
    this.#store = store;
    this.#now = options.now ?? Date.now;
    this.#onError = options.onError;
    this.#mostClients = options.mostClients ?? MOST_CLIENTS;
  }

  get size(): number {
    return this.#clients.size;
  }

  /** Rejects only as the store does (STORE_UNAVAILABLE), as the create itself would. */
  take(key: string, policy: RatePolicy): RateDecision | Promise<RateDecision> {
    const now = this.#now();
    const client = this.#client(key, policy, now);
    if (client.held > 0) {
      if (now < client.heldUntil) {
        client.held -= 1;
        return allowed(client, now);
      }
      this.#giveBackHeld(key, client);
    }
    if (now < client.emptyUntil) return refused(client, now);
    return this.#lease(key, client).then(() => this.take(key, policy));
  }

  /** Takes nothing: for answers refused before the create. */
  headers(key: string, policy: RatePolicy): RateLimitHeaders {
    const client = this.#clients.get(key);
    if (client === undefined || !samePolicy(client.policy, policy)) return fields(policy, policy.limit, 0);
    return allowed(client, this.#now()).headers;
  }

  start(): void {
    this.#sweeper ??= setInterval(() => this.#sweep(), SWEEP_MS).unref();
  }

  async stop(): Promise<void> {
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper);
    this.#sweeper = undefined;
    for (const [key, client] of this.#clients) if (client.held > 0) this.#giveBackHeld(key, client);
    this.#clients.clear();
    await this.#flush();
  }

  #client(key: string, policy: RatePolicy, now: number): Client {
    let client = this.#clients.get(key);
    if (client !== undefined && client.policy !== policy && !samePolicy(client.policy, policy)) {
      // A token's policy changed (token update): what was taken under the old one goes back.
      if (client.held > 0) this.#giveBackHeld(key, client);
      this.#clients.delete(key);
      client = undefined;
    }
    if (client === undefined) {
      if (this.#clients.size >= this.#mostClients) this.#forgetOldest();
      client = { policy, held: 0, heldUntil: 0, left: policy.limit, seenAt: now, emptyUntil: 0, lease: undefined, usedAt: now };
      this.#clients.set(key, client);
    }
    client.usedAt = now;
    return client;
  }

  // One take from the store at a time a client: the creates that come meanwhile wait for it.
  #lease(key: string, client: Client): Promise<void> {
    if (client.lease !== undefined) return client.lease;
    const { policy } = client;
    const want = Math.ceil(policy.limit / SLICES_PER_QUOTA);
    const lease = this.#store.take(key, { capacity: policy.limit, windowMs: policy.windowMs }, want).then(
      ({ granted, left }) => {
        client.lease = undefined;
        const now = this.#now();
        if (this.#clients.get(key) !== client) {
          // Forgotten meanwhile: the slice goes straight back.
          if (granted > 0) this.#returns.push({ key, capacity: policy.limit, windowMs: policy.windowMs, count: granted });
          return;
        }
        client.held += granted;
        client.heldUntil = now + Math.min(LONGEST_HOLD_MS, policy.windowMs / SLICES_PER_QUOTA);
        client.left = left;
        client.seenAt = now;
        // Until one whole unit has refilled; at least a millisecond, so that the create asking is answered.
        if (granted === 0) client.emptyUntil = now + Math.max(1, Math.ceil(((1 - left) * policy.windowMs) / policy.limit));
      },
      (error: unknown) => {
        client.lease = undefined;
        throw error;
      },
    );
    client.lease = lease;
    return lease;
  }

  #giveBackHeld(key: string, client: Client): void {
    this.#returns.push({ key, capacity: client.policy.limit, windowMs: client.policy.windowMs, count: client.held });
    client.left += client.held;
    client.held = 0;
  }

  #forgetOldest(): void {
    for (const [key, client] of this.#clients) {
      if (client.held > 0) this.#giveBackHeld(key, client);
      this.#clients.delete(key);
      return;
    }
  }

  #sweep(): void {
    const now = this.#now();
    for (const [key, client] of this.#clients) {
      if (client.held > 0 && now >= client.heldUntil) this.#giveBackHeld(key, client);
      else if (client.held === 0 && client.lease === undefined && now - client.usedAt >= IDLE_MS && now >= client.emptyUntil) this.#clients.delete(key);
    }
    void this.#flush();
    if (now >= this.#nextPrune) {
      this.#nextPrune = now + PRUNE_MS;
      this.#store.prune().catch(this.#onError);
    }
  }

  /** Sends the slices given back to the store; if it cannot take them, their units are lost until refilled: never more, only less. */
  async #flush(): Promise<void> {
    if (this.#returns.length === 0) return;
    const returns = this.#returns;
    this.#returns = [];
    await this.#store.giveBack(returns).catch(this.#onError);
  }
}

function allowed(client: Client, now: number): RateDecision {
  const { policy } = client;
  const refilled = client.left + ((now - client.seenAt) * policy.limit) / policy.windowMs;
  const remaining = Math.min(policy.limit, client.held + Math.floor(refilled));
  return { allowed: true, policy, headers: fields(policy, remaining, untilWhole(policy, remaining)), retryAfterSeconds: 0 };
}

function refused(client: Client, now: number): RateDecision {
  const { policy } = client;
  const refilled = Math.min(policy.limit, client.left + ((now - client.seenAt) * policy.limit) / policy.windowMs);
  const retryAfterSeconds = Math.max(1, Math.ceil((client.emptyUntil - now) / 1000));
  const headers = fields(policy, 0, untilWhole(policy, refilled));
  headers['retry-after'] = String(retryAfterSeconds);
  return { allowed: false, policy, headers, retryAfterSeconds };
}

function untilWhole(policy: RatePolicy, units: number): number {
  return Math.max(0, Math.ceil(((policy.limit - units) * policy.windowMs) / policy.limit / 1000));
}

function fields(policy: RatePolicy, remaining: number, seconds: number): RateLimitHeaders {
  return { 'ratelimit-policy': policy.header, ratelimit: `"${policy.name}";r=${remaining};t=${seconds}` };
}
