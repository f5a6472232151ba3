import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { parseDatabaseUrl } from '../../src/config/config.js';
import { testBackends } from '../helpers/backends.js';
import { createToken, postPlant, runInProcess, startServer } from '../helpers/processes.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Everything the store holds, read past the service: every byte of the
 * SQLite file and its write-ahead log, or every row of every PostgreSQL
 * table as text.
 */
async function everythingStored(databaseUrl: string): Promise<string> {
  const database = parseDatabaseUrl(databaseUrl, 'test');
  if (database.kind === 'sqlite') {
    const folder = dirname(database.path);
    return readdirSync(folder)
      .map((file) => readFileSync(join(folder, file)).toString('latin1'))
      .join('\n');
  }
  const client = new pg.Client(database.url);
  await client.connect();
  try {
    const { rows: tables } = await client.query<{ name: string }>(
      "SELECT quote_ident(table_name) AS name FROM information_schema.tables WHERE table_schema = 'public'",
    );
    assert.ok(tables.some((table) => table.name === 'tokens'));
    const texts: string[] = [];
    for (const table of tables) {
      const { rows } = await client.query<{ row: string }>(`SELECT t::text AS row FROM ${table.name} t`);
      texts.push(...rows.map((row) => row.row));
    }
    return texts.join('\n');
  } finally {
    await client.end();
  }
}

for (const backend of await testBackends('the store holds only token hashes')) {
  test(`${backend.name}: the store holds only the SHA-256 of each token, never the token, while serving and after`, async (t) => {
    const env = { DATABASE_URL: await backend.freshUrl(t) };
    const tokens = [await createToken(env, 'alpha'), await createToken(env, 'beta', ['--expires-in', '30d']), await createToken(env, 'gamma')];
    assert.equal((await runInProcess(['token', 'revoke', 'gamma'], env)).code, 0);
    const server = await startServer(t, env);
    // The server looks each token up, and caches it, as it serves.
    for (const [i, token] of tokens.entries()) {
      assert.equal((await postPlant(server.url, token, `{"id":${i},"name":"p"}`)).status, i === 2 ? 401 : 200);
    }

    const check = async (when: string) => {
      const stored = await everythingStored(env.DATABASE_URL);
      for (const [i, token] of tokens.entries()) {
        assert.ok(stored.includes(sha256(token)), `${when}: token ${i}'s hash is stored (so this reads where tokens are kept)`);
        assert.ok(!stored.includes(token), `${when}: token ${i} itself is not stored`);
        assert.ok(!stored.includes(token.slice('ps_'.length)), `${when}: nor its secret part`);
      }
    };
    await check('while serving');
    assert.equal(await server.stop(), 0);
    await check('after the server stopped');
  });
}
