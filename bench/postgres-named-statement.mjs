// Named against unnamed prepared statements for the service's batch insert,
// on one direct PostgreSQL connection: `node bench/postgres-named-statement.mjs [URL] [BATCH]`.
// Rounds alternate, each a fresh table, BATCH plants a batch (64 by default; 1
// is a lone request's batch); prints the median time a batch of each kind.
import pg from 'pg';

const url = process.argv[2] ?? 'postgres://postgres@127.0.0.1:5432/test';
const BATCH = Number(process.argv[3] ?? 64);
const BATCHES = 1000;
const ROUNDS = 5;
const text = `INSERT INTO bench_named_plants (id, name, tag)
  SELECT DISTINCT ON (id) id, name, tag
    FROM unnest($1::bigint[], $2::text[], $3::text[]) WITH ORDINALITY AS batch (id, name, tag, position)
   ORDER BY id, position
  ON CONFLICT (id) DO NOTHING
  RETURNING id`;

const client = new pg.Client({ connectionString: url });
await client.connect();
const times = { named: [], unnamed: [] };
let next = 0n;
for (let round = 0; round < ROUNDS; round++) {
  for (const kind of round % 2 === 0 ? ['named', 'unnamed'] : ['unnamed', 'named']) {
    await client.query('DROP TABLE IF EXISTS bench_named_plants');
    await client.query('CREATE TABLE bench_named_plants (id BIGINT PRIMARY KEY, name TEXT NOT NULL, tag TEXT, created_at TIMESTAMPTZ NOT NULL DEFAULT now())');
    const started = process.hrtime.bigint();
    for (let b = 0; b < BATCHES; b++) {
      const ids = Array.from({ length: BATCH }, () => String(next++));
      const values = [ids, ids.map((id) => `plant ${id}`), ids.map(() => null)];
      await client.query(kind === 'named' ? { name: `bench-${round}`, text, values } : { text, values });
    }
    times[kind].push(Number(process.hrtime.bigint() - started) / 1e3 / BATCHES);
  }
}
await client.query('DROP TABLE IF EXISTS bench_named_plants');
await client.end();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const kind of ['named', 'unnamed']) {
  console.log(`${kind}: median ${median(times[kind]).toFixed(0)} µs a batch of ${BATCH} (rounds: ${times[kind].map((t) => t.toFixed(0)).join(', ')})`);
}
