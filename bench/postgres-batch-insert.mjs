// The group commit's batch insert four ways, on one direct PostgreSQL
// connection: as an unnamed statement (parsed and planned for each batch), as
// a named prepared statement (planned once, but tied to its server connection,
// which PgBouncer's transaction pooling does not keep), and as the call to the
// schema's create_plant_batch function (whose statement is planned once per
// server connection, inside the server), unnamed as the store sends it behind
// such a pooler and named as it sends it otherwise.
// `npm run build && node bench/postgres-batch-insert.mjs [URL] [BATCH]`: 1 plant
// a batch by default (a lone create's batch); rounds rotate the order, each on
// a fresh schema migrated by the service's own migrations; prints the median
// time a batch of each kind.
import pg from 'pg';
import { migrate, migrations } from '../dist/store/postgres/migrations.js';
import { CREATE_PLANTS } from '../dist/store/postgres/postgres-store.js';

const url = process.argv[2] ?? 'postgres://postgres@127.0.0.1:5432/test';
const BATCH = Number(process.argv[3] ?? 1);
const BATCHES = 1000;
const ROUNDS = 5;
const SCHEMA = 'bench_batch_insert';

// The function's body (the newest migration that makes it) as a statement of its own, its arguments as parameters.
const createPlants = migrations.findLast((step) => step.sql.includes('CREATE FUNCTION create_plant'));
const statement = /RETURN QUERY([\s\S]*?);\s*END/
  .exec(createPlants.sql)[1]
  .replace('unnest(ids, names, tags)', 'unnest($1::bigint[], $2::text[], $3::text[])')
  .replace('cardinality(ids)', 'cardinality($1::bigint[])');
if (!statement.includes('$3::text[]') || /\bids\b/.test(statement)) throw new Error('the batch insert is no longer written as this benchmark expects');
const kinds = {
  unnamed: (values) => ({ text: statement, values }),
  named: (values) => ({ name: 'bench-batch-insert', text: statement, values }),
  function: (values) => ({ text: CREATE_PLANTS, values }),
  'named function': (values) => ({ name: 'bench-batch-call', text: CREATE_PLANTS, values }),
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
