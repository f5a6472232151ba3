// node --import tsx --test bench/synchronous-commit.ts
// What synchronous replication costs a commit: one-row INSERT commits one after another on the
// primary of a synchronous pair (test/helpers/replicated-postgres.ts, on loopback), with
// synchronous_commit = on (the commit waits for the standby's flush) against local (it does not),
// in alternating rounds. Prints the median commit of each round, in µs.
import { test } from 'node:test';
import { startReplicatedPair } from '../test/helpers/replicated-postgres.js';

const ROUNDS = 5;
const COMMITS = 1000;

test('a commit with synchronous replication, against one without', async (t) => {
  const pair = await startReplicatedPair(t);
  if (pair === undefined) return;
  const client = await pair.primary.connect();
  await client.query('CREATE TABLE commits (id bigint PRIMARY KEY, name text NOT NULL)');
  let id = 0;
  const medianCommit = async (mode: 'on' | 'local'): Promise<number> => {
    await client.query(`SET synchronous_commit = ${mode}`);
    const micros: number[] = [];
    for (let i = 0; i < COMMITS; i++) {
      const started = process.hrtime.bigint();
      await client.query('INSERT INTO commits VALUES ($1, $2)', [++id, 'plant']);
      micros.push(Number(process.hrtime.bigint() - started) / 1000);
    }
    return micros.sort((a, b) => a - b)[COMMITS / 2]!;
  };
  const medians = { on: [] as number[], local: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    medians.on.push(await medianCommit('on'));
    medians.local.push(await medianCommit('local'));
  }
  for (const [mode, values] of Object.entries(medians)) {
    t.diagnostic(`synchronous_commit=${mode}: ${values.map((value) => value.toFixed(0)).join(', ')} µs a commit (median of each round)`);
  }
});
