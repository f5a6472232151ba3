import assert from 'node:assert/strict';
import { chmodSync } from 'node:fs';
import { type TestContext, test } from 'node:test';
import pg from 'pg';
import type { Migration } from '../../src/store/migration.js';
import { migrate as migratePostgres, migrations as postgresMigrations } from '../../src/store/postgres/migrations.js';
import Database from 'better-sqlite3';
import { migrate as migrateSqlite, migrations as sqliteMigrations } from '../../src/store/sqlite/migrations.js';
import { type Backend, existingStoreUrl, testBackends } from '../helpers/backends.js';
import { runMain } from '../helpers/in-process-cli.js';
import { runCli } from '../helpers/processes.js';

/** What the tests need of a backend's store beyond its URL: its migrations, its label, and a way to set its schema's version. */
function schemaOf(backend: Backend) {
  const sqlite = backend.name === 'sqlite';
  return {
    migrations: sqlite ? sqliteMigrations : postgresMigrations,
    label(url: string): string {
      if (sqlite) return `SQLite store ${url.slice('sqlite:'.length)}`;
      const parsed = new URL(url);
      return `PostgreSQL store "${parsed.pathname.slice(1)}" on ${parsed.hostname}:${parsed.port || 5432}`;
    },
    /** A store on `backend` migrated by its first step only, as an older build left it. */
    async older(t: TestContext): Promise<string> {
      const url = await backend.freshUrl(t);
      if (sqlite) {
        const path = url.slice('sqlite:'.length);
        const db = new Database(path);
        migrateSqlite(db, sqliteMigrations.slice(0, 1));
        db.close();
        // Private, as the service makes its stores: an open one is named with a warning.
        chmodSync(path, 0o600);
      } else {
        const pool = new pg.Pool({ connectionString: url, max: 1 });
        await migratePostgres(pool, postgresMigrations.slice(0, 1));
        await pool.end();
      }
      return url;
    },
    /** A store that a newer build migrated to version 999. */
    async newer(t: TestContext): Promise<string> {
      const url = await existingStoreUrl(t, backend);
      if (sqlite) {
        const db = new Database(url.slice('sqlite:'.length));
        db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 0)").run();
        db.close();
      } else {
        const client = new pg.Client(url);
        await client.connect();
        await client.query("INSERT INTO schema_migrations (version, name) VALUES (999, 'future')");
        await client.end();
      }
      return url;
    },
  };
}

const newestOf = (steps: readonly Migration[]) => steps.at(-1)!.version;

for (const backend of await testBackends('plantstore schema')) {
  const schema = schemaOf(backend);
  const newest = newestOf(schema.migrations);

  test(`${backend.name}: plantstore schema on a current store says there is nothing to migrate, as text and as JSON, naming the store on stderr`, async (t) => {
    const url = await existingStoreUrl(t, backend);
    const using = `plantstore: using the ${schema.label(url)}\n`;
    assert.deepEqual(await runMain(['schema'], { DATABASE_URL: url }), {
      code: 0,
      stdout: `schema version: ${newest}\nnewest this build knows: ${newest}\nmigration: none: the store is up to date\n`,
      stderr: using,
    });
    const json = await runMain(['schema', '--json'], { DATABASE_URL: url });
    assert.deepEqual([json.code, json.stderr], [0, using]);
    assert.deepEqual(JSON.parse(json.stdout), { store: schema.label(url), version: newest, newest, state: 'current', pending: [] });
  });

  test(`${backend.name}: on an older store, plantstore schema lists the pending steps by name without migrating; a read command then migrates it forward and says so`, async (t) => {
    const url = await schema.older(t);
    const env = { DATABASE_URL: url };
    const pending = schema.migrations.slice(1);
    for (let run = 0; run < 2; run++) {
      const shown = await runMain(['schema'], env);
      assert.equal(shown.code, 0, shown.stderr);
      assert.equal(
        shown.stdout,
        `schema version: 1\nnewest this build knows: ${newest}\nmigration: serve, and any other command that opens the store, first applies\n` +
          pending.map((step) => `  ${step.version} ${step.name}\n`).join(''),
        `run ${run + 1}: still at version 1`,
      );
    }
    const json = JSON.parse((await runMain(['schema', '--json'], env)).stdout) as { state: string; pending: unknown[] };
    assert.equal(json.state, 'behind');
    assert.deepEqual(json.pending, pending.map(({ version, name }) => ({ version, name })));

    const exported = await runMain(['plants', 'export'], env);
    assert.deepEqual(exported, { code: 0, stdout: '', stderr: `plantstore: migrated the ${schema.label(url)} from schema version 1 to ${newest}\n` });
    assert.equal((JSON.parse((await runMain(['schema', '--json'], env)).stdout) as { state: string }).state, 'current');
  });

  test(`${backend.name}: a store newer than this build: plantstore schema says so, and serve and the other commands refuse it in one line`, async (t) => {
    const url = await schema.newer(t);
    const env = { DATABASE_URL: url };
    const shown = await runMain(['schema'], env);
    assert.equal(shown.code, 0, shown.stderr);
    assert.equal(
      shown.stdout,
      `schema version: 999\nnewest this build knows: ${newest}\n` +
        'migration: none: the store is newer than this build, which refuses to open it (serve exits 1); run a newer plantstore\n',
    );
    assert.equal((JSON.parse((await runMain(['schema', '--json'], env)).stdout) as { state: string }).state, 'newer');
    const refusal = `plantstore: the ${schema.label(url)} has schema version 999, newer than this build knows (${newest}); run a newer plantstore\n`;
    assert.deepEqual(await runMain(['token', 'list'], env), { code: 1, stdout: '', stderr: refusal });
    const served = await runCli(['serve', '--port', '0'], env);
    assert.deepEqual(served, { code: 1, stdout: '', stderr: refusal });
  });
}
