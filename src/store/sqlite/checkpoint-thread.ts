// The SQLite checkpointer's thread: it copies committed pages from the
// write-ahead log into the database file in the background, so that the
// writer never stops to do it (a checkpoint fsyncs the whole database file).
import { parentPort, workerData } from 'node:worker_threads';
import { openConnection } from './connection.js';

const { path, intervalMs } = workerData as { path: string; intervalMs: number };
const db = openConnection(path);

const timer = setInterval(() => {
  try {
    // PASSIVE never waits for, or blocks, the writer or readers.
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // A busy or failing checkpoint is tried again at the next tick; the writer's own fallback still applies.
  }
}, intervalMs);

parentPort!.once('message', () => {
  clearInterval(timer);
  db.close();
  parentPort!.close();
});
