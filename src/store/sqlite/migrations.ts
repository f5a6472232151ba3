import type Database from 'better-sqlite3';
import type { Migration } from '../migration.js';

/** This backend's schema changes (see `Migration`). */
export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: 'create plants and tokens',
    sql: `
      -- INTEGER PRIMARY KEY is the rowid: a signed 64-bit integer, the whole int64 range.
      CREATE TABLE plants (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        tag TEXT,
        created_at INTEGER NOT NULL
      ) STRICT;

      CREATE TABLE tokens (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        created_at INTEGER NOT NULL,
        expires_at INTEGER,
        revoked_at INTEGER
      ) STRICT;

      -- A name identifies one active token; a revoked token's name may be reused.
      CREATE UNIQUE INDEX tokens_active_name ON tokens (name) WHERE revoked_at IS NULL;
    `,
  },
];

/**
 * Brings the schema up to the newest version. Runs in one IMMEDIATE
 * transaction, so two processes starting at once cannot both apply a step.
 */
export function migrate(db: Database.Database, steps: readonly Migration[] = migrations): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at INTEGER NOT NULL
  ) STRICT`);
  const newest = steps.at(-1)?.version ?? 0;
  const apply = db.transaction(() => {
    const row = db.prepare('SELECT max(version) AS version FROM schema_migrations').get() as { version: number | null };
    const current = row.version ?? 0;
    if (current > newest) {
      throw new Error(`the database schema is at version ${current}, newer than this build knows (${newest}); run a newer plantstore`);
    }
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const step of steps) {
      if (step.version <= current) continue;
      db.exec(step.sql);
      record.run(step.version, step.name, Date.now());
    }
  });
  apply.immediate();
}
