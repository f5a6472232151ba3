import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { setImmediate, setTimeout as sleep } from 'node:timers/promises';
import { ServiceError } from '../../errors.js';
import type { NewPlant } from '../../plants/plant.js';
import { type SchemaChange, schemaState, type SchemaState, StoreMissing, type StoreOpening } from '../migration.js';
import type { RateLimitStore } from '../rate-limit-store.js';
import { MessagesWritten, type WebhookStore } from '../webhook-store.js';
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
import { backUpStore, type BackupReport } from './backup.js';
import Database from 'better-sqlite3';
import { translateErrors } from './errors.js';
import { migrate, migrations, schemaVersion } from './migrations.js';
import { type PlantRow, SqlitePlantBatch, toNewPlant } from './plant-batch.js';
import { SqliteRateLimitStore } from './rate-limit-store.js';
import { makePrivateFile, makePrivateFolders } from './private-files.js';
import { type RestoreReport, restoreStore } from './restore.js';
import { SqliteWebhookStore } from './webhook-store.js';

/** How long a statement waits for a lock another process holds (the command line writes the same file), and how long a new file's switch to WAL is tried again. */
const BUSY_TIMEOUT_MS = 5000;
/** A batch that meets the write lock tries again after the I/O waiting this many times, then every millisecond. */
const LOCK_SPINS = 8;
const NO_FILE = 'no such file';
const NO_SCHEMA = 'the file holds no plantstore tables';

/** Times are milliseconds since the epoch. */
type TokenRow = StoreTokenRow<number>;

/** What a transaction throws to be rolled back when a concurrent command took the name (see `replaceToken`). */
const NAME_TAKEN = Symbol('name-taken');

/**
 * The embedded store, one SQLite file. WAL with synchronous=FULL makes each commit durable before the call returns, so a 200 sent
 * after it survives `kill -9` and power loss. Plants are written on the caller's thread: under load the process has one core, and a
 * commit is short next to reading its requests. Checkpoints are SQLite's own, made by the writer: a thread for them gains nothing.
 */
export class SqliteStore implements Store {
  /** SQLite has one writer at a time; batches, not parallel transactions, make it fast. */
  readonly writeConcurrency = 1;
  readonly databaseSystem = 'sqlite';
  readonly #db: Database.Database;
  readonly #plantBatch: SqlitePlantBatch;
  readonly #statements;
  readonly #outbox: Database.Database;
  readonly webhooks: WebhookStore;
  readonly rateLimits: RateLimitStore;

  private constructor(db: Database.Database, outbox: Database.Database) {
    this.#db = db;
    this.#outbox = outbox;
    this.rateLimits = new SqliteRateLimitStore(outbox);
    const written = new MessagesWritten();
    const webhooks = new SqliteWebhookStore(outbox, written);
    this.webhooks = webhooks;
    this.#plantBatch = new SqlitePlantBatch(db, written.tell);
    this.#statements = {
      listPlants: db.prepare('SELECT id, name, tag FROM plants WHERE id > ? ORDER BY id LIMIT ?').safeIntegers(true),
      listPlantsFromStart: db.prepare('SELECT id, name, tag FROM plants ORDER BY id LIMIT ?').safeIntegers(true),
      insertToken: db.prepare(
        'INSERT INTO tokens (name, hash, created_at, expires_at, rate_limit) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING *',
      ),
      findToken: db.prepare('SELECT * FROM tokens WHERE hash = ?'),
      listTokens: db.prepare('SELECT * FROM tokens ORDER BY id'),
      // A token retiring after a rotation still works until its revoked_at: it can be revoked sooner.
      revokeById: db.prepare('UPDATE tokens SET revoked_at = @at WHERE id = @id AND (revoked_at IS NULL OR revoked_at > @at) RETURNING *'),
      revokeByName: db.prepare('UPDATE tokens SET revoked_at = @at WHERE name = @name AND (revoked_at IS NULL OR revoked_at > @at) RETURNING *'),
      activeByName: db.prepare('SELECT id FROM tokens WHERE name = ? AND revoked_at IS NULL'),
      setRateLimit: db.prepare(
        'UPDATE tokens SET rate_limit = @rateLimit WHERE name = @name AND (revoked_at IS NULL OR revoked_at > @now) RETURNING *',
      ),
      recordUse: db.prepare('UPDATE tokens SET last_used_at = @at WHERE id = @id AND (last_used_at IS NULL OR last_used_at < @at)'),
      countPlants: db.prepare('SELECT count(*) AS count FROM plants').safeIntegers(true),
      importToken: db.prepare(
        // SQLite's min and max of several values are NULL when one is: the coalesce keeps the other.
        `INSERT INTO tokens (id, name, hash, created_at, expires_at, revoked_at, last_used_at, rate_limit) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (hash) DO UPDATE SET
           revoked_at = coalesce(min(tokens.revoked_at, excluded.revoked_at), tokens.revoked_at, excluded.revoked_at),
           last_used_at = coalesce(max(tokens.last_used_at, excluded.last_used_at), tokens.last_used_at, excluded.last_used_at)`,
      ),
      ping: db.prepare('SELECT count(*) FROM schema_migrations'),
    };
  }

  /**
   * Opens and migrates; with `mayCreate`, makes a missing file (0600) and its folders (0700), else throws StoreMissing for a file that
   * is missing or holds no store, changing nothing. The page cache is SQLite's default (the operating system caches the file), not
   * better-sqlite3's larger one, which fills under load and is most of what the service's memory grows by.
   */
  static open(path: string, { mayCreate = true, onSchemaChange }: StoreOpening = {}): SqliteStore {
    return translateErrors(() => {
      const inMemory = path === ':memory:';
      if (!mayCreate && !inMemory && !existsSync(path)) throw new StoreMissing(NO_FILE);
      if (mayCreate && !inMemory) {
        makePrivateFolders(dirname(path));
        makePrivateFile(path);
      }
      const db = new Database(path, { fileMustExist: !mayCreate && !inMemory });
      let outbox: Database.Database | undefined;
      let change: SchemaChange;
      try {
        // Before the switch to WAL, which would write to a file that is not a store.
        if (!mayCreate && schemaVersion(db) === undefined) throw new StoreMissing(NO_SCHEMA);
        switchToWal(db);
        db.pragma('synchronous = FULL');
        db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
        db.pragma('cache_size = -2048');
        change = migrate(db);
        // The outbox's connection (why NORMAL: SqliteWebhookStore); an in-memory database is one per connection, so there one serves both.
        if (inMemory) outbox = db;
        else {
          outbox = new Database(path);
          outbox.pragma('synchronous = NORMAL');
          outbox.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
          outbox.pragma('cache_size = -512');
        }
      } catch (error) {
        if (outbox !== db) outbox?.close();
        db.close();
        throw error;
      }
      if (change.from !== change.to) onSchemaChange?.(change);
      return new SqliteStore(db, outbox);
    });
  }

  static readSchema(path: string): SchemaState {
    return translateErrors(() => {
      if (path === ':memory:' || !existsSync(path)) return schemaState(migrations, undefined, NO_FILE);
      const db = new Database(path, { fileMustExist: true });
      try {
        db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
        return schemaState(migrations, schemaVersion(db), NO_SCHEMA);
      } finally {
        db.close();
      }
    });
  }

  /** Puts the backup `file` in place of the store at `path`, or makes the store from it; refused while any process has it open. */
  static restore(file: string, path: string, options: { replace: boolean }): Promise<RestoreReport> {
    return restoreStore(file, path, options);
  }

  /** Writes a consistent copy of the store to `target` while servers go on writing it (backup.ts). */
  backup(target: string, options: { replace: boolean }): Promise<BackupReport> {
    return backUpStore(this.#db.name, target, options);
  }

  async createPlants(plants: readonly NewPlant[], traceParents?: readonly (string | undefined)[]): Promise<CreatePlantResult[]> {
    // The write lock is waited for here, between turns of the event loop, not asleep in SQLite's busy handler.
    const deadline = Date.now() + BUSY_TIMEOUT_MS;
    for (let tries = 1; ; tries++) {
      const results = translateErrors(() => this.#plantBatch.tryWrite(plants, traceParents));
      if (results !== undefined) return results;
      if (Date.now() >= deadline) throw new ServiceError('STORE_UNAVAILABLE', { cause: new Error(`the write lock stayed with another connection for ${BUSY_TIMEOUT_MS} ms`) });
      await (tries < LOCK_SPINS ? setImmediate() : sleep(1));
    }
  }

  async importPlants(plants: readonly NewPlant[]): Promise<CreatePlantResult[]> {
    return translateErrors(() => this.#plantBatch.restore(plants));
  }

  #inTransaction<T>(work: () => T): T {
    return this.#db.transaction(work).immediate();
  }

  async countPlants(): Promise<bigint> {
    return translateErrors(() => (this.#statements.countPlants.get() as { count: bigint }).count);
  }

  async listPlants({ after, limit }: { after?: bigint; limit: number }): Promise<NewPlant[]> {
    return translateErrors(() => {
      const rows = (
        after === undefined ? this.#statements.listPlantsFromStart.all(limit) : this.#statements.listPlants.all(after, limit)
      ) as PlantRow[];
      return rows.map(toNewPlant);
    });
  }

  #insertTokenRow(token: NewTokenRecord): TokenRow | undefined {
    return this.#statements.insertToken.get(token.name, token.hash, token.createdAt.getTime(), token.expiresAt?.getTime() ?? null, token.rateLimit ?? null) as
      | TokenRow
      | undefined;
  }

  async insertToken(token: NewTokenRecord): Promise<TokenRecord | 'name-taken'> {
    return translateErrors(() => {
      const row = this.#insertTokenRow(token);
      return row === undefined ? 'name-taken' : toTokenRecord(row);
    });
  }

  async findTokenByHash(hash: string): Promise<TokenRecord | undefined> {
    return translateErrors(() => {
      const row = this.#statements.findToken.get(hash) as TokenRow | undefined;
      return row && toTokenRecord(row);
    });
  }

  async listTokens(): Promise<TokenRecord[]> {
    return (await this.exportTokens()).map(withoutHash);
  }

  async exportTokens(): Promise<StoredToken[]> {
    return translateErrors(() =>
      (this.#statements.listTokens.all() as (TokenRow & { hash: string })[]).map((row) => ({ ...toTokenRecord(row), hash: row.hash })),
    );
  }

  async importTokens(tokens: readonly StoredToken[]): Promise<number> {
    return translateErrors(() =>
      this.#inTransaction(() => {
        let added = 0;
        for (const token of tokens) {
          const known = this.#statements.findToken.get(token.hash) !== undefined;
          try {
            this.#statements.importToken.run(
              token.id,
              token.name,
              token.hash,
              token.createdAt.getTime(),
              token.expiresAt?.getTime() ?? null,
              token.revokedAt?.getTime() ?? null,
              token.lastUsedAt?.getTime() ?? null,
              token.rateLimit,
            );
          } catch (error) {
            if (error instanceof Database.SqliteError && error.code.startsWith('SQLITE_CONSTRAINT')) {
              throw tokenClash(token);
            }
            throw error;
          }
          if (!known) added += 1;
        }
        return added;
      }),
    );
  }

  async revokeToken(ref: TokenRef, at: Date): Promise<TokenRecord[]> {
    return translateErrors(() => {
      const rows = (
        'id' in ref
          ? this.#statements.revokeById.all({ at: at.getTime(), id: ref.id })
          : this.#statements.revokeByName.all({ at: at.getTime(), name: ref.name })
      ) as TokenRow[];
      return rows.map(toTokenRecord);
    });
  }

  async replaceToken(
    token: NewTokenRecord,
    retireAt: Date,
    { requireActive }: { requireActive: boolean },
  ): Promise<{ record: TokenRecord; retired: TokenRecord[] } | 'no-active-token' | 'name-taken'> {
    return translateErrors(() => {
      try {
        return this.#inTransaction(() => {
          if (requireActive && this.#statements.activeByName.get(token.name) === undefined) return 'no-active-token';
          const retired = this.#statements.revokeByName.all({ at: retireAt.getTime(), name: token.name }) as TokenRow[];
          const row = this.#insertTokenRow(token);
          if (row === undefined) throw NAME_TAKEN;
          return { record: toTokenRecord(row), retired: retired.map(toTokenRecord) };
        });
      } catch (error) {
        if (error === NAME_TAKEN) return 'name-taken';
        throw error;
      }
    });
  }

  async setTokenRateLimit(name: string, rateLimit: string | null): Promise<TokenRecord[]> {
    return translateErrors(() => (this.#statements.setRateLimit.all({ name, rateLimit, now: Date.now() }) as TokenRow[]).map(toTokenRecord));
  }

  async recordTokenUses(uses: readonly TokenUse[]): Promise<void> {
    translateErrors(() =>
      this.#inTransaction(() => {
        for (const use of uses) this.#statements.recordUse.run({ at: use.at.getTime(), id: use.id });
      }),
    );
  }

  async ping(): Promise<void> {
    translateErrors(() => this.#statements.ping.get());
  }

  settings(): { journalMode: string; synchronous: 'off' | 'normal' | 'full' | 'extra'; cacheSize: string } {
    const synchronous = this.#db.pragma('synchronous', { simple: true }) as 0 | 1 | 2 | 3;
    const cacheSize = this.#db.pragma('cache_size', { simple: true }) as number;
    return {
      journalMode: this.#db.pragma('journal_mode', { simple: true }) as string,
      synchronous: (['off', 'normal', 'full', 'extra'] as const)[synchronous],
      // Negative: a size in KiB; positive: a number of pages.
      cacheSize: cacheSize < 0 ? `${-cacheSize} KiB` : `${cacheSize} pages`,
    };
  }

  async close(): Promise<void> {
    if (this.#outbox.open) this.#outbox.close();
    if (this.#db.open) this.#db.close();
  }
}

function toTokenRecord(row: TokenRow): TokenRecord {
  return tokenRecord(row, (time) => new Date(time));
}

const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Switching a new file to WAL needs it alone, and SQLite answers SQLITE_BUSY at once rather than wait for the lock: two workers of
 * --workers N starting on a new file meet here, so the switch is tried every 10 ms until the busy timeout.
 */
function switchToWal(db: Database.Database): void {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (;;) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw error;
      Atomics.wait(pause, 0, 0, 10);
    }
  }
}
