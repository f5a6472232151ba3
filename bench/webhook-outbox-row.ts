// What the webhook outbox row costs a plant on SQLite, and what other shapes
// of it would: `npx tsx bench/webhook-outbox-row.ts`. Each round writes
// 800 batches of 64 plants (WAL, synchronous=FULL, as the service) into a
// fresh file per shape, rounds rotating; prints the median µs a plant.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { encodePlantIds } from '../src/store/sqlite/plant-batch.js';

const ROUNDS = 5;
const BATCHES = 800;
const BATCH = 64;
const shapes: Record<string, { schema: string; insert?: string; values?: (plantId: number, now: number) => unknown[]; perBatch?: true }> = {
  'no outbox': { schema: '' },
  'a row a plant (rowid table and due index)': {
    schema: `CREATE TABLE webhook_messages (id INTEGER PRIMARY KEY AUTOINCREMENT, subscription_id INTEGER NOT NULL, plant_id INTEGER NOT NULL,
               created_at INTEGER NOT NULL, state TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0,
               next_attempt_at INTEGER NOT NULL, lease_owner TEXT, finished_at INTEGER) STRICT;
             CREATE INDEX webhook_messages_due ON webhook_messages (subscription_id, next_attempt_at) WHERE state = 'pending';`,
    insert: 'INSERT INTO webhook_messages (subscription_id, plant_id, created_at, next_attempt_at) VALUES (?, ?, ?, ?)',
    values: (plantId, now) => [1, plantId, now, now],
  },
  'the service: one packed row a batch (webhook_batches)': {
    schema: `CREATE TABLE webhook_batches (id INTEGER PRIMARY KEY, subscription_id INTEGER NOT NULL, created_at INTEGER NOT NULL,
               plants INTEGER NOT NULL, plant_ids BLOB NOT NULL) STRICT;
             CREATE INDEX webhook_batches_subscription ON webhook_batches (subscription_id, id);`,
    insert: 'INSERT INTO webhook_batches (subscription_id, created_at, plants, plant_ids) VALUES (?, ?, ?, ?)',
    perBatch: true,
  },
  'without rowid, keyed by subscription, due time and plant': {
    schema: `CREATE TABLE webhook_messages (subscription_id INTEGER NOT NULL, next_attempt_at INTEGER NOT NULL, plant_id INTEGER NOT NULL,
               created_at INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, lease_owner TEXT,
               PRIMARY KEY (subscription_id, next_attempt_at, plant_id)) STRICT, WITHOUT ROWID;`,
    insert: 'INSERT INTO webhook_messages (subscription_id, next_attempt_at, plant_id, created_at) VALUES (?, ?, ?, ?)',
    values: (plantId, now) => [1, now, plantId, now],
  },
};
const times: Record<string, number[]> = Object.fromEntries(Object.keys(shapes).map((name) => [name, []]));
const names = Object.keys(shapes);
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < names.length; i++) {
    const name = names[(i + round) % names.length]!;
    const shape = shapes[name]!;
    const dir = mkdtempSync(join(tmpdir(), 'plantstore-outbox-'));
    const db = new Database(join(dir, 'bench.db'));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('cache_size = -2048');
    db.exec(`CREATE TABLE plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT, created_at INTEGER NOT NULL) STRICT; ${shape.schema}`);
    const insertPlant = db.prepare('INSERT INTO plants (id, name, tag, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING');
    const insertMessage = shape.insert === undefined ? undefined : db.prepare(shape.insert);
    let id = 2 ** 40;
    const batch = db.transaction(() => {
      const now = Date.now();
      const created: bigint[] = [];
      for (let j = 0; j < BATCH; j++) {
        const plantId = id++;
        insertPlant.run(plantId, `plant ${plantId}`, 'bench', now);
        if (shape.perBatch) created.push(BigInt(plantId));
        else insertMessage?.run(...shape.values!(plantId, now));
      }
      if (shape.perBatch) insertMessage!.run(1, now, created.length, encodePlantIds(created));
    });
    const started = performance.now();
    for (let b = 0; b < BATCHES; b++) batch.immediate();
    times[name]!.push(((performance.now() - started) * 1000) / (BATCHES * BATCH));
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
for (const name of names) console.log(`${median(times[name]!).toFixed(2)} µs a plant: ${name}`);
