import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { TestContext } from 'node:test';
import pg from 'pg';
import { parseDatabaseUrl } from '../../src/config/config.js';
import { openStore } from '../../src/store/open-store.js';

/** The server the PostgreSQL suites use; each test makes its own database there. */
const POSTGRES_ADMIN_URL = process.env['PLANTSTORE_TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

/** CI sets PLANTSTORE_TEST_POSTGRES=require: there a missing server is a failure, not a skip. */
const POSTGRES_REQUIRED = process.env['PLANTSTORE_TEST_POSTGRES'] === 'require';

let reachable: Promise<boolean> | undefined;

/** Whether the PostgreSQL server answers; throws when it does not and it is required. */
export async function postgresReachable(): Promise<boolean> {
  reachable ??= (async () => {
    const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 2000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  })();
  const answer = await reachable;
  if (!answer && POSTGRES_REQUIRED) {
    throw new Error(`PLANTSTORE_TEST_POSTGRES=require, but no PostgreSQL answers at ${POSTGRES_ADMIN_URL}`);
  }
  return answer;
}

export const POSTGRES_SKIP_REASON = `no PostgreSQL answers at ${POSTGRES_ADMIN_URL}; set PLANTSTORE_TEST_POSTGRES_URL to point at one, or PLANTSTORE_TEST_POSTGRES=require to make this a failure`;

/** A new empty database for one test, dropped when the test ends; resolves its URL. */
export async function freshPostgresDatabase(t: TestContext): Promise<string> {
  return newDatabase(t, 'template1');
}

/**
 * A new database at the newest schema for one test, dropped when the test ends: a copy of a template
 * migrated once for each version of the PostgreSQL store's code, which takes a fraction of a migration.
 */
export async function migratedPostgresDatabase(t: TestContext): Promise<string> {
  template ??= migratedTemplate();
  return newDatabase(t, await template);
}

async function newDatabase(t: TestContext, templateName: string): Promise<string> {
  const name = `plantstore_test_${randomBytes(6).toString('hex')}`;
  await adminPool().query(`CREATE DATABASE ${name} TEMPLATE ${templateName}`);
  t.after(() => adminPool().query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  return databaseUrl(name);
}

function databaseUrl(name: string): string {
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

let pool: pg.Pool | undefined;

/** One pool of connections to the server for the whole file; an idle pool lets the process end. */
function adminPool(): pg.Pool {
  pool ??= new pg.Pool({ connectionString: POSTGRES_ADMIN_URL, max: 2, allowExitOnIdle: true });
  return pool;
}

let template: Promise<string> | undefined;

/**
 * The template's name carries a digest of the store's code, so that a change of schema makes a new one.
 * An advisory lock lets one process of the run (or of another clone's run) build it while the rest wait.
 */
async function migratedTemplate(): Promise<string> {
  const folder = new URL('../../src/store/postgres/', import.meta.url);
  const digest = createHash('sha256').update(readFileSync(new URL('../migration.ts', folder)));
  for (const file of readdirSync(folder).sort()) digest.update(file).update(readFileSync(new URL(file, folder)));
  const name = `plantstore_template_${digest.digest('hex').slice(0, 16)}`;
  const client = await adminPool().connect();
  try {
    await client.query("SELECT pg_advisory_lock(hashtext('plantstore test template'))");
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount === 0) {
      // Built under another name and renamed when whole: a run killed half way leaves no half-migrated template.
      const building = `${name}_${randomBytes(4).toString('hex')}`;
      await client.query(`CREATE DATABASE ${building}`);
      await (await openStore({ database: parseDatabaseUrl(databaseUrl(building), 'test'), databasePoolSize: 1 })).close();
      await client.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
    }
    return name;
  } finally {
    await client.query("SELECT pg_advisory_unlock(hashtext('plantstore test template'))").catch(() => undefined);
    client.release();
  }
}
