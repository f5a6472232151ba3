// npx tsx bench/batch-statement-cost.ts [--batch N] [--seconds S] [--rounds R]
// The database's CPU a plant for the group commit's batch statement on PostgreSQL, beside the durable floor's
// plain multi-row INSERT: 9 connections (the service's batches in flight) each send batches of N new plants
// back to back for S seconds, one statement after the other in rounds, on a fresh store with no subscription.
// The CPU is every `postgres` process's (from /proc), over the plants written. Run it at two batch sizes to
// split a statement's cost into what a batch costs and what a plant does. (bench/postgres-batch-insert.mjs times
// the service's statement forms one batch at a time on one connection, from the client.)
import { parseArgs } from 'node:util';
import pg from 'pg';
import { CALL_CREATE_PLANT_BATCH, INSERT_PLANTS } from '../src/store/postgres/plant-batch.js';
import { FLOOR_INSERT_PLANTS } from './floor-insert.mjs';
import { median } from './median.js';
import { cpuSince, postgresCpuSeconds } from './postgres-cpu.js';
import { freshStore } from './stores.js';

const { values } = parseArgs({
  options: {
    batch: { type: 'string', default: '18' },
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '5' },
    'postgres-url': { type: 'string', default: process.env['PLANTSTORE_TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test' },
  },
});
const BATCH = Number(values.batch);
const CONNECTIONS = 9;

const STATEMENTS: Record<string, string> = {
  'durable floor (INSERT ... ON CONFLICT DO NOTHING)': FLOOR_INSERT_PLANTS,
  'service (named statement)': INSERT_PLANTS,
  'service behind PgBouncer (create_plant_batch)': CALL_CREATE_PLANT_BATCH,
};

const store = await freshStore('postgres', values['postgres-url']);
const pool = new pg.Pool({ connectionString: store.url, max: CONNECTIONS });
const perPlant = new Map<string, number[]>(Object.keys(STATEMENTS).map((name) => [name, []]));
let nextId = 1n;
try {
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const [index, [name, text]] of Object.entries(STATEMENTS).entries()) {
      const statement = { name: `cost_${index}`, text };
      const ends = Date.now() + Number(values.seconds) * 1000;
      let plants = 0;
      const before = postgresCpuSeconds();
      await Promise.all(
        Array.from({ length: CONNECTIONS }, async () => {
          while (Date.now() < ends) {
            const ids = Array.from({ length: BATCH }, () => String(nextId++));
            await pool.query({ ...statement, values: [ids, ids.map(() => 'Monstera'), ids.map(() => 'aroid')] });
            plants += BATCH;
          }
        }),
      );
      const us = (cpuSince(before, postgresCpuSeconds()) * 1e6) / plants;
      perPlant.get(name)!.push(us);
      console.log(`round ${round}: ${name}: ${us.toFixed(1)} µs of the database's CPU a plant, ${plants} plants`);
    }
  }
} finally {
  await pool.end();
  await store.cleanup();
}
console.log(`\nbatches of ${BATCH}, median of ${values.rounds} rounds:`);
for (const [name, figures] of perPlant) console.log(`${name}: ${median(figures).toFixed(1)} µs a plant`);
