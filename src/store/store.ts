import { type NewPlant, samePlant } from '../plants/plant.js';
import type { CreatePlantResult, PlantBatchWriter } from '../plants/plant-writer.js';
import type { RateLimitStore } from './rate-limit-store.js';
import type { WebhookStore } from './webhook-store.js';

export { CREATED, type CreatePlantResult } from '../plants/plant-writer.js';

/**
 * What the service needs from a database; asynchronous, so that a networked database or a batching writer fits behind it.
 * A database that cannot be reached or written throws `ServiceError('STORE_UNAVAILABLE')`; a taken id or name is a result, not an error.
 */
export interface Store extends PlantBatchWriter {
  /** Which database this is, as OpenTelemetry's `db.system.name` says it. */
  readonly databaseSystem: 'sqlite' | 'postgresql';

  readonly webhooks: WebhookStore;

  /** The token buckets of the rate limits, one quota a client across every process on the store. */
  readonly rateLimits: RateLimitStore;

  /** Up to `limit` plants with an id greater than `after` (all when absent), by ascending id. */
  listPlants(page: { after?: bigint; limit: number }): Promise<NewPlant[]>;

  /** Stores a new token record. Resolves `name-taken` when an active token has that name. */
  insertToken(token: NewTokenRecord): Promise<TokenRecord | 'name-taken'>;

  /** The token whose hash this is, revoked and expired ones included. */
  findTokenByHash(hash: string): Promise<TokenRecord | undefined>;

  /** Every token, oldest first. */
  listTokens(): Promise<TokenRecord[]>;

  exportTokens(): Promise<StoredToken[]>;

  /**
   * Stores tokens from another store, keeping their ids; for a hash already here, the earlier revocation and the later last use are kept.
   * Resolves how many were new; throws when an id or an active name is held by a different token.
   */
  importTokens(tokens: readonly StoredToken[]): Promise<number>;

  /** As `createPlants`, in one durable transaction with the same outcomes, but writes no webhook message: restored plants were announced once. */
  importPlants(plants: readonly NewPlant[]): Promise<CreatePlantResult[]>;

  countPlants(): Promise<bigint>;

  /** Revokes at `at` the tokens of this id or name that still work then (by name: the active one and any retiring); resolves them. */
  revokeToken(ref: TokenRef, at: Date): Promise<TokenRecord[]>;

  /**
   * In one transaction, makes `token` its name's active token; each token of that name working past `retireAt` stops then (a grace period
   * when later than now). Resolves the new record and those retired; `no-active-token`, changing nothing, when `requireActive` and the
   * name has none; `name-taken` when a concurrent command stored an active token of that name first.
   */
  replaceToken(
    token: NewTokenRecord,
    retireAt: Date,
    options: { requireActive: boolean },
  ): Promise<{ record: TokenRecord; retired: TokenRecord[] } | 'no-active-token' | 'name-taken'>;

  /** Sets `rateLimit` (`600/1m`; null for RATE_LIMIT's) on the tokens of `name` that still work; resolves those changed. */
  setTokenRateLimit(name: string, rateLimit: string | null): Promise<TokenRecord[]>;

  /** Moves each `lastUsedAt` forward, never back: several processes write the same tokens. Called every few seconds, never per request. */
  recordTokenUses(uses: readonly TokenUse[]): Promise<void>;

  /** Answers when the database answers a real query; throws STORE_UNAVAILABLE otherwise. */
  ping(): Promise<void>;

  /** Closes the connection; pending writes are committed first. */
  close(): Promise<void>;
}

/** Replayed when `existing` is the same plant, a conflict otherwise: plants are never changed, so the committed row is the one to compare. */
export function outcomeAgainst(existing: NewPlant, plant: NewPlant): CreatePlantResult {
  return samePlant(existing, plant) ? { outcome: 'replayed' } : { outcome: 'conflict', existing };
}

export function plantFromRow(id: bigint, name: string, tag: string | null): NewPlant {
  return tag === null ? { id, name } : { id, name, tag };
}

/** A token as stored: never the token itself, only its SHA-256 hash. */
export interface TokenRecord {
  id: number;
  name: string;
  createdAt: Date;
  expiresAt: Date | null;
  /** When it stops working: past once revoked, future while it retires after a rotation. */
  revokedAt: Date | null;
  /** Its latest use that a server has written, within a few seconds of it; null when none has. */
  lastUsedAt: Date | null;
  /** Its own rate limit as written (`600/1m`); null when it is under RATE_LIMIT's. */
  rateLimit: string | null;
}

export interface TokenUse {
  id: number;
  at: Date;
}

export interface StoredToken extends TokenRecord {
  hash: string;
}

/** A tokens row as both stores read it, its times as the driver gives them (`T`). */
export interface TokenRow<T> {
  id: number | string;
  name: string;
  created_at: T;
  expires_at: T | null;
  revoked_at: T | null;
  last_used_at: T | null;
  rate_limit: string | null;
}

export function tokenRecord<T>(row: TokenRow<T>, toDate: (time: T) => Date): TokenRecord {
  const optional = (time: T | null) => (time === null ? null : toDate(time));
  return {
    id: Number(row.id),
    name: row.name,
    createdAt: toDate(row.created_at),
    expiresAt: optional(row.expires_at),
    revokedAt: optional(row.revoked_at),
    lastUsedAt: optional(row.last_used_at),
    rateLimit: row.rate_limit,
  };
}

export function withoutHash({ hash: _hash, ...record }: StoredToken): TokenRecord {
  return record;
}

export function tokenClash(token: StoredToken): Error {
  return new Error(`token ${token.id} (${token.name}): its id or active name is held by a different token here`);
}

export interface NewTokenRecord {
  name: string;
  hash: string;
  createdAt: Date;
  expiresAt: Date | null;
  /** Its own rate limit (`600/1m`); absent or null for RATE_LIMIT's. */
  rateLimit?: string | null;
}

export type TokenRef = { id: number } | { name: string };

export async function* plantPages(store: Store, pageSize: number): AsyncGenerator<NewPlant[]> {
  let after: bigint | undefined;
  for (;;) {
    const page = await store.listPlants(after === undefined ? { limit: pageSize } : { after, limit: pageSize });
    if (page.length === 0) return;
    yield page;
    after = page.at(-1)!.id;
  }
}

/** Version 00 of W3C Trace Context, lowercase hex; a trace id or span id of zeros is invalid there. */
const TRACE_PARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/** Whether a store keeps `value` as a traceparent; anything else is kept as none, not refused: it must not fail the batch it came with. */
export function isTraceParent(value: string | undefined): value is string {
  return value !== undefined && value.length === 55 && TRACE_PARENT.test(value);
}
