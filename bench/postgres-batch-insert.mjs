// The group commit's batch insert four ways, on one direct PostgreSQL
// connection: its statement unnamed (parsed and planned for each batch) and as
// the named prepared statement the store sends on a direct connection (planned
// once, but tied to its server connection, which PgBouncer's transaction
// pooling does not keep); and the call to the schema's create_plant_batch
// function (whose statement is planned once per server connection, inside the
// server), unnamed as the store sends it behind such a pooler, and named.
// `npm run build && node bench/postgres-batch-insert.mjs [URL] [BATCH]`: 1 plant
// a batch by default (a lone create's batch); rounds rotate the order, each on
// a fresh schema migrated by the service's own migrations; prints the median
// time a batch of each kind.
import pg from 'pg';
import { migrate } from '../dist/store/postgres/migrations.js';
import { CALL_CREATE_PLANT_BATCH, INSERT_PLANTS } from '../dist/store/postgres/plant-batch.js';

const url = process.argv[2] ?? 'postgres://postgres@127.0.0.1:5432/test';
const BATCH = Number(process.argv[3] ?? 1);
const BATCHES = 1000;
const ROUNDS = 5;
const SCHEMA = 'bench_batch_insert';

const kinds = {
  unnamed: (values) => ({ text: INSERT_PLANTS, values }),
  named: (values) => ({ name: 'bench-batch-insert', text: INSERT_PLANTS, values }),
  function: (values) => ({ text: CALL_CREATE_PLANT_BATCH, values }),
  'named function': (values) => ({ name: 'bench-batch-call', text: CALL_CREATE_PLANT_BATCH, values }),
};

const admin = new pg.Client({ connectionString: url });
await admin.connect();
const times = Object.fromEntries(Object.keys(kinds).map((kind) => [kind, []]));
let next = 0n;
for (let round = 0; round < ROUNDS; round++) {
  const order = Object.keys(kinds);
  for (let r = 0; r < round; r++) order.push(order.shift());
  for (const kind of order) {
    await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
    await admin.query(`CREATE SCHEMA ${SCHEMA}`);
    const pool = new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${SCHEMA}` });
    await migrate(pool);
    const client = await pool.connect();
    const started = process.hrtime.bigint();
    for (let b = 0; b < BATCHES; b++) {
      const ids = Array.from({ length: BATCH }, () => String(next++));
      await client.query(kinds[kind]([ids, ids.map((id) => `plant ${id}`), ids.map(() => null)]));
    }
    times[kind].push(Number(process.hrtime.bigint() - started) / 1e3 / BATCHES);
    client.release();
    await pool.end();
  }
}
await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
await admin.end();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [kind, xs] of Object.entries(times)) {
  console.log(`${kind}: median ${median(xs).toFixed(0)} µs a batch of ${BATCH} (rounds: ${xs.map((t) => t.toFixed(0)).join(', ')})`);
}
