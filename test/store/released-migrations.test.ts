import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { Migration } from '../../src/store/migration.js';
import { MESSAGES_WRITTEN, OUTBOX_OF_TRACED } from '../../src/store/postgres/plant-batch.js';
import { migrations as postgresMigrations } from '../../src/store/postgres/migrations.js';
import { migrations as sqliteMigrations } from '../../src/store/sqlite/migrations.js';

/**
 * The SHA-256 of each released migration's SQL. A released migration never
 * changes: databases that ran it keep what it made, so a new text would give
 * fresh installs another schema under the same version. A change of schema
 * is a new migration, whose digest is added here with it.
 */
const RELEASED: Record<'sqlite' | 'postgres', Record<number, string>> = {
  sqlite: {
    1: '4b37e393fc0db5d2474782e6749cbeb5571ecd54ebdead79f7533ab1854ec83c',
    2: '31d835a954a0ea0a50d6438bd7c7444051285726d36fbda8b0939b62475a2792',
    3: '9939b19d73babea4d4509651709e01f0155888ef7ec42c80fc232914e72c1012',
    4: '952cd98f2caa329faeec810ace3c616802d1000b8145bea62fa28fc516a9922a',
    5: '01ba95ab854e7f0c635603df1034d3f1d7fe5f745ec2b7e9a19c126cb4970cf8',
    6: '8264269359d6e36fec9a6d780585ba1e2eac6ad18694630e772063206e89f6f8',
    7: '9339e0d0dcf657700ae7ef12758c61a4adc8795e7855c56819063495f55a219c',
  },
  postgres: {
    1: '841476095a6b7a241dd956eed57af61d590e3315fd9518e0704a6a48d3aaa65d',
    2: '2c41102e1bf48b49449ef2d75b7a907b573e3beee79279a971f9765fc25f2921',
    3: '7e388b6cf36e4fd03ddc3577e0d7e4cd2f439eb731fdb43960d3be3383048fc7',
    4: '115ef307f0129604acd0a98123c1d664f5fc77819ee6cb71ba4f36069257bd1f',
    5: 'be8ef14308302be876bdcc47af0b3eeeedae5b86f4ab6c8f49222646af49f67f',
    6: 'ff7c2875a3435794a9d51acb86e81b9f94a2b28580965b6376ad6287df873a2d',
    7: '77531123759876587c4ac2d074072f947fba61bc1f45515e3bdd317e176b0d03',
    8: '5b2a4213c2977588165021cec1c9ca01d7319f85ec53c2b5e600d8c4b683da5f',
    9: 'e97a6938b450f822d036907af7412542db9396e3faa0328e45c02ac9bb5b67ce',
    10: 'f89061a0d9824327f8d7b7c41ee14f671578c4a4599e21e59fb8de6731350fe0',
  },
};

const digest = (migration: Migration) => createHash('sha256').update(migration.sql).digest('hex');

for (const [backend, migrations] of [['sqlite', sqliteMigrations], ['postgres', postgresMigrations]] as const) {
  test(`${backend}: every released migration's SQL is the text it was released with`, () => {
    for (const migration of migrations) {
      const released = RELEASED[backend][migration.version];
      assert.ok(released !== undefined, `${backend} migration ${migration.version} (${migration.name}) has no digest: add '${digest(migration)}' to RELEASED with it`);
      assert.equal(digest(migration), released, `${backend} migration ${migration.version} (${migration.name}) changed: a released migration never changes; write a new one`);
    }
    assert.deepEqual(
      migrations.map((migration) => migration.version),
      Object.keys(RELEASED[backend]).map(Number),
      `${backend}: no released migration is removed`,
    );
  });

  test(`${backend}: each migration's SQL is a literal, made of no constant the running code uses`, () => {
    // A template literal's interpolations leave no mark in the string; the source is read instead.
    const text = readFileSync(new URL(`../../src/store/${backend}/migrations.ts`, import.meta.url), 'utf8');
    const start = text.indexOf('export const migrations');
    const list = text.slice(start, text.indexOf('\n];', start));
    assert.doesNotMatch(list, /\$\{/, `${backend}/migrations.ts interpolates into a migration`);
    assert.doesNotMatch(list, /sql: [^`]/, `${backend}/migrations.ts builds a migration's SQL other than as a literal`);
  });
}

test("the newest create_plant_batch of four arguments writes the messages the store's own statement writes", () => {
  const newest = postgresMigrations.findLast((migration) => /FUNCTION create_plant_batch\(ids BIGINT\[\], names TEXT\[\], tags TEXT\[\], trace_parents TEXT\[\]\)/.test(migration.sql));
  assert.ok(newest !== undefined);
  assert.ok(newest.sql.includes(OUTBOX_OF_TRACED), `migration ${newest.version}'s function writes other messages than plant-batch.ts: a change to the statement's outbox is a new migration of the function`);
  assert.ok(newest.sql.includes(MESSAGES_WRITTEN), `migration ${newest.version}'s function counts its messages otherwise than plant-batch.ts`);
});
