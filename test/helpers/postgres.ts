import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import pg from 'pg';

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
  const name = `plantstore_test_${randomBytes(6).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  t.after(() => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
