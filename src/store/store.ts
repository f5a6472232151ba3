import { type NewPlant, samePlant } from '../plants/plant.js';
import type { CreatePlantResult, PlantBatchWriter } from '../plants/plant-writer.js';
import type { RateLimitStore } from './rate-limit-store.js';
import type { WebhookStore } from './webhook-store.js';

export { CREATED, type CreatePlantResult } from '../plants/plant-writer.js';

/**
 * What the service needs from a database, in the domain's own words.
 *
 * Every method is asynchronous so that a networked database, or a writer that
 * batches commits, can stand behind the same interface. Implementations live
 * one folder per backend (`sqlite/`, ...) and translate their driver's errors:
 * a database that cannot be reached or written throws
 * `ServiceError('STORE_UNAVAILABLE')`; an id or name that is taken is a result,
 * not an error.
 */
export interface Store extends PlantBatchWriter {
  /** Which database this is, as OpenTelemetry's `db.system.name` says it. */
  readonly databaseSystem: 'sqlite' | 'postgresql';

  /** Webhook subscriptions and the outbox that `createPlants` writes into. */
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

  /** Every token with its hash, for moving tokens to another store. */
  exportTokens(): Promise<StoredToken[]>;

  /**
   * Stores tokens taken from another store, keeping their ids. A token whose
   * hash is already here is not stored again, but the earlier of its two
   * revocations and the later of its two last uses are kept. Resolves how many were new; throws when an id or an active name is
   * held by a different token.
   */
  importTokens(tokens: readonly StoredToken[]): Promise<number>;

  /**
   * Stores plants taken from elsewhere (`plantstore plants import`) as
   * `createPlants` does, in one durable transaction with the same outcome
   * per plant, but writes no webhook message: these plants are restored,
   * not created, and were announced when they were first created.
   */
  importPlants(plants: readonly NewPlant[]): Promise<CreatePlantResult[]>;

  /** How many plants are stored. */
  countPlants(): Promise<bigint>;

  /**
   * Revokes at `at` the tokens this id or name picks that still work then:
   * by name, the active one and any retiring after a rotation. Resolves them
   * as revoked; none when nothing of that id or name still works.
   */
  revokeToken(ref: TokenRef, at: Date): Promise<TokenRecord[]>;

  /**
   * Stores `token` as its name's active token in place of the ones there, in
   * one transaction. Each token of that name that would work past `retireAt`
   * stops then: `retireAt` is now to replace them at once, or later to let
   * clients switch over a grace period. Resolves the new record and the ones
   * retired; `no-active-token`, with nothing changed, when `requireActive`
   * and the name has no active token; `name-taken` when a concurrent
   * command stored an active token of that name first.
   */
  replaceToken(
    token: NewTokenRecord,
    retireAt: Date,
    options: { requireActive: boolean },
  ): Promise<{ record: TokenRecord; retired: TokenRecord[] } | 'no-active-token' | 'name-taken'>;

  /**
   * Gives the tokens of `name` that still work (the active one and any
   * retiring after a rotation) the rate limit `rateLimit` (`600/1m`), or
   * RATE_LIMIT's when null. Resolves the tokens changed; none when no token
   * of that name still works.
   */
  setTokenRateLimit(name: string, rateLimit: string | null): Promise<TokenRecord[]>;

  /**
   * Moves each token's `lastUsedAt` forward to its use, never back: several
   * processes write the same tokens, each what it saw. Called every few
   * seconds with what a server noted in memory, never per request.
   */
  recordTokenUses(uses: readonly TokenUse[]): Promise<void>;

  /** Answers when the database answers a real query; throws STORE_UNAVAILABLE otherwise. */
  ping(): Promise<void>;

  /** Closes the connection; pending writes are committed first. */
  close(): Promise<void>;
}

/**
 * The outcome of a plant whose id `existing` holds: replayed when it is the
 * same plant, a conflict otherwise. Plants are never changed or deleted, so
 * the committed row that holds an id is the one to compare with.
 */
export function outcomeAgainst(existing: NewPlant, plant: NewPlant): CreatePlantResult {
  return samePlant(existing, plant) ? { outcome: 'replayed' } : { outcome: 'conflict', existing };
}

/** A plant from the columns of its row, where a plant without a tag has NULL. */
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

/** One token's latest use seen by a server. */
export interface TokenUse {
  id: number;
  at: Date;
}

/** A token record with its hash: what moves between stores. */
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

/** A token's record from its row, `toDate` reading each of its times. */
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

/** A stored token without its hash, as `listTokens` answers it. */
export function withoutHash({ hash: _hash, ...record }: StoredToken): TokenRecord {
  return record;
}

/** What `importTokens` throws when a token's id or active name is taken here by a different token. */
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

/** Every stored plant by ascending id, a page of at most `pageSize` at a time. */
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

/**
 * Whether a store keeps `value` as a plant's traceparent. Both stores keep
 * anything else as none, rather than refuse it: a malformed one could not
 * continue a trace anyway, and it must not fail the batch of plants it came
 * with. (SQLite packs a valid one in 25 bytes, and zeros mean none.)
 */
export function isTraceParent(value: string | undefined): value is string {
  return value !== undefined && value.length === 55 && TRACE_PARENT.test(value);
}
