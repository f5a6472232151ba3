import { parsePostgresUrl } from '../../config/config.js';
import type { NewPlant } from '../../plants/plant.js';
import { NO_DATABASE, schemaState, type SchemaState, StoreMissing, type StoreOpening } from '../migration.js';
import {
  type CreatePlantResult,
  type NewTokenRecord,
  type Store,
  type StoredToken,
  tokenClash,
  type TokenRecord,
  tokenRecord,
  type TokenRef,
  type TokenRow as StoreTokenRow,
  type TokenUse,
  withoutHash,
} from '../store.js';
import type { RateLimitStore } from '../rate-limit-store.js';
import { MessagesWritten, type WebhookStore } from '../webhook-store.js';
import { translateErrors } from './errors.js';
import { migrate, migrations, NO_SCHEMA, schemaVersion } from './migrations.js';
import { type PlantRow, PostgresPlantBatch, toNewPlant } from './plant-batch.js';
import { PrimaryPool } from './primary-pool.js';
import { PostgresRateLimitStore } from './rate-limit-store.js';
import { PreparedStatements } from './prepared-statements.js';
import { PostgresWebhookStore } from './webhook-store.js';
import { inTransaction, rollBack } from './transaction.js';

/** node-postgres reads TIMESTAMPTZ as Dates and BIGINT as strings. */
interface TokenRow extends StoreTokenRow<Date> {
  hash: string;
}

/** The tokens of a name that still work at $1 (a token retiring after a rotation works until its revoked_at) stop then. */
const RETIRE_BY_NAME = 'UPDATE tokens SET revoked_at = $1 WHERE name = $2 AND (revoked_at IS NULL OR revoked_at > $1) RETURNING *';

export interface PostgresOptions {
  poolSize: number;
  /** How long to wait for a connection to a server before trying the next or answering 503, in milliseconds. */
  connectTimeoutMs?: number;
  /** How long a statement may wait for its answer before its connection is dropped, in milliseconds. */
  queryTimeoutMs?: number;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 2000;
const DEFAULT_QUERY_TIMEOUT_MS = 5000;
/** PostgreSQL's invalid_catalog_name: the URL names a database the server does not have. */
const NO_SUCH_DATABASE = '3D000';

/**
 * The shared store, for many instances on one database. Every write is one autocommit statement or one
 * transaction (transaction.ts), so it returns only once committed. No session state but named statements,
 * dropped at the first sign they are lost (PreparedStatements): it works through PgBouncer in transaction mode.
 * BIGINT travels as text, so no id passes through a double.
 */
export class PostgresStore implements Store {
  readonly #pool: PrimaryPool;
  readonly writeConcurrency: number;
  readonly databaseSystem = 'postgresql';
  readonly #prepared: PreparedStatements;
  readonly #plantBatch: PostgresPlantBatch;
  readonly webhooks: WebhookStore;
  readonly rateLimits: RateLimitStore;

  private constructor(pool: PrimaryPool, poolSize: number) {
    this.#pool = pool;
    this.rateLimits = new PostgresRateLimitStore(pool);
    this.#prepared = new PreparedStatements(pool);
    const written = new MessagesWritten();
    const webhooks = new PostgresWebhookStore(pool, this.#prepared, written);
    this.webhooks = webhooks;
    this.#plantBatch = new PostgresPlantBatch(pool, this.#prepared, written.tell);
    // Leave a connection for token lookups and readiness while batches are written.
    this.writeConcurrency = Math.max(1, poolSize - 1);
  }

  /**
   * Connects and migrates; `url` is libpq's form, with one host or several (PrimaryPool). Without `mayCreate`,
   * a database that does not exist or holds no schema is a StoreMissing, and nothing is created in it.
   */
  static async open(url: string, options: PostgresOptions & StoreOpening): Promise<PostgresStore> {
    const pool = newPool(url, options);
    try {
      const change = await translateErrors(() => migrate(pool, migrations, { mayCreate: options.mayCreate ?? true }));
      if (change.from !== change.to) options.onSchemaChange?.(change);
    } catch (error) {
      await pool.end();
      if (options.mayCreate === false && isNoSuchDatabase(error)) throw new StoreMissing(NO_DATABASE);
      throw error;
    }
    return new PostgresStore(pool, options.poolSize);
  }

  /** The schema of the database at `url`, read without creating or changing anything. */
  static async readSchema(url: string, options: Omit<PostgresOptions, 'poolSize'>): Promise<SchemaState> {
    const pool = newPool(url, { ...options, poolSize: 1 });
    try {
      return schemaState(migrations, await translateErrors(() => schemaVersion(pool)), NO_SCHEMA);
    } catch (error) {
      if (isNoSuchDatabase(error)) return schemaState(migrations, undefined, NO_DATABASE);
      throw error;
    } finally {
      await pool.end();
    }
  }

  async createPlants(plants: readonly NewPlant[], traceParents?: readonly (string | undefined)[]): Promise<CreatePlantResult[]> {
    return translateErrors(() => this.#plantBatch.write(plants, traceParents));
  }

  async importPlants(plants: readonly NewPlant[]): Promise<CreatePlantResult[]> {
    return translateErrors(() => this.#plantBatch.restore(plants));
  }

  /** Whether the frequent statements go as named prepared statements (see `PreparedStatements`). */
  get preparedStatements(): boolean {
    return this.#prepared.kept;
  }

  async listPlants({ after, limit }: { after?: bigint; limit: number }): Promise<NewPlant[]> {
    return translateErrors(async () => {
      const { rows } =
        after === undefined
          ? await this.#pool.query<PlantRow>('SELECT id::text AS id, name, tag FROM plants ORDER BY plants.id LIMIT $1', [limit])
          : await this.#pool.query<PlantRow>('SELECT id::text AS id, name, tag FROM plants WHERE plants.id > $1 ORDER BY plants.id LIMIT $2', [
              after.toString(),
              limit,
            ]);
      return rows.map(toNewPlant);
    });
  }

  async countPlants(): Promise<bigint> {
    return translateErrors(async () => {
      const { rows } = await this.#pool.query<{ count: string }>('SELECT count(*)::text AS count FROM plants');
      return BigInt(rows[0]!.count);
    });
  }

  async insertToken(token: NewTokenRecord): Promise<TokenRecord | 'name-taken'> {
    return translateErrors(async () => {
      const { rows } = await this.#pool.query<TokenRow>(
        `INSERT INTO tokens (name, hash, created_at, expires_at, rate_limit) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT DO NOTHING RETURNING *`,
        [token.name, token.hash, token.createdAt, token.expiresAt, token.rateLimit ?? null],
      );
      return rows[0] === undefined ? 'name-taken' : toTokenRecord(rows[0]);
    });
  }

  async findTokenByHash(hash: string): Promise<TokenRecord | undefined> {
    return translateErrors(async () => {
      const { rows } = await this.#pool.query<TokenRow>('SELECT * FROM tokens WHERE hash = $1', [hash]);
      return rows[0] && toTokenRecord(rows[0]);
    });
  }

  async listTokens(): Promise<TokenRecord[]> {
    return (await this.exportTokens()).map(withoutHash);
  }

  async exportTokens(): Promise<StoredToken[]> {
    return translateErrors(async () => {
      const { rows } = await this.#pool.query<TokenRow>('SELECT * FROM tokens ORDER BY id');
      return rows.map((row) => ({ ...toTokenRecord(row), hash: row.hash }));
    });
  }

  async importTokens(tokens: readonly StoredToken[]): Promise<number> {
    return translateErrors(() =>
      inTransaction(this.#pool, async (client) => {
        let added = 0;
        for (const token of tokens) {
          const { rows } = await client.query<{ added: boolean }>(
            // LEAST and GREATEST leave NULLs out.
            `INSERT INTO tokens (id, name, hash, created_at, expires_at, revoked_at, last_used_at, rate_limit) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (hash) DO UPDATE SET revoked_at = LEAST(tokens.revoked_at, excluded.revoked_at),
               last_used_at = GREATEST(tokens.last_used_at, excluded.last_used_at)
             RETURNING (xmax = 0) AS added`,
            [token.id, token.name, token.hash, token.createdAt, token.expiresAt, token.revokedAt, token.lastUsedAt, token.rateLimit],
          ).catch((error: unknown) => {
            if ((error as { code?: string }).code === '23505') {
              throw tokenClash(token);
            }
            throw error;
          });
          if (rows[0]?.added) added += 1;
        }
        // Identity columns do not move past explicit ids by themselves.
        await client.query(`SELECT setval(pg_get_serial_sequence('tokens', 'id'), GREATEST((SELECT max(id) FROM tokens), 1))`);
        return added;
      }),
    );
  }

  async revokeToken(ref: TokenRef, at: Date): Promise<TokenRecord[]> {
    return translateErrors(async () => {
      const { rows } =
        'id' in ref
          ? await this.#pool.query<TokenRow>(
              'UPDATE tokens SET revoked_at = $1 WHERE id = $2 AND (revoked_at IS NULL OR revoked_at > $1) RETURNING *',
              [at, ref.id],
            )
          : await this.#pool.query<TokenRow>(RETIRE_BY_NAME, [at, ref.name]);
      return rows.map(toTokenRecord);
    });
  }

  async replaceToken(
    token: NewTokenRecord,
    retireAt: Date,
    { requireActive }: { requireActive: boolean },
  ): Promise<{ record: TokenRecord; retired: TokenRecord[] } | 'no-active-token' | 'name-taken'> {
    return translateErrors(() =>
      inTransaction(this.#pool, async (client) => {
        const active = await client.query('SELECT id FROM tokens WHERE name = $1 AND revoked_at IS NULL FOR UPDATE', [token.name]);
        if (requireActive && active.rowCount === 0) return rollBack('no-active-token' as const);
        const retired = await client.query<TokenRow>(RETIRE_BY_NAME, [retireAt, token.name]);
        const inserted = await client.query<TokenRow>(
          'INSERT INTO tokens (name, hash, created_at, expires_at, rate_limit) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING *',
          [token.name, token.hash, token.createdAt, token.expiresAt, token.rateLimit ?? null],
        );
        if (inserted.rows[0] === undefined) return rollBack('name-taken' as const);
        return { record: toTokenRecord(inserted.rows[0]), retired: retired.rows.map(toTokenRecord) };
      }),
    );
  }

  async setTokenRateLimit(name: string, rateLimit: string | null): Promise<TokenRecord[]> {
    return translateErrors(async () => {
      const { rows } = await this.#pool.query<TokenRow>(
        'UPDATE tokens SET rate_limit = $1 WHERE name = $2 AND (revoked_at IS NULL OR revoked_at > now()) RETURNING *',
        [rateLimit, name],
      );
      return rows.map(toTokenRecord);
    });
  }

  async recordTokenUses(uses: readonly TokenUse[]): Promise<void> {
    // One statement for them all; a row already past a use is not written (instances write concurrently).
    await translateErrors(() =>
      this.#pool.query(
        `UPDATE tokens SET last_used_at = used.at
           FROM unnest($1::bigint[], $2::timestamptz[]) AS used (id, at)
          WHERE tokens.id = used.id AND (tokens.last_used_at IS NULL OR tokens.last_used_at < used.at)`,
        [uses.map((use) => use.id), uses.map((use) => use.at)],
      ),
    );
  }

  async ping(): Promise<void> {
    await translateErrors(() => this.#pool.query('SELECT 1'));
  }

  /** For diagnostics: a 200 is only as durable as a commit with `synchronous_commit` on (or remote_*) and `fsync` on. */
  async settings(): Promise<{ synchronousCommit: string; fsync: string }> {
    return translateErrors(async () => {
      const { rows } = await this.#pool.query<{ synchronous_commit: string; fsync: string }>(
        "SELECT current_setting('synchronous_commit') AS synchronous_commit, current_setting('fsync') AS fsync",
      );
      return { synchronousCommit: rows[0]!.synchronous_commit, fsync: rows[0]!.fsync };
    });
  }

  async close(): Promise<void> {
    if (!this.#pool.ended) await this.#pool.end();
  }
}

function newPool(url: string, options: PostgresOptions): PrimaryPool {
  return new PrimaryPool(parsePostgresUrl(url, 'DATABASE_URL'), {
    poolSize: options.poolSize,
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    queryTimeoutMs: options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS,
  });
}

function isNoSuchDatabase(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === NO_SUCH_DATABASE;
}

function toTokenRecord(row: TokenRow): TokenRecord {
  return tokenRecord(row, (time) => time);
}
