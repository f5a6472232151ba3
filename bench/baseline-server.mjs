// The ceilings the service is measured against: Node's own HTTP server doing
// the least a plant store must do. It reads the body, parses the JSON,
// compares the bearer token to a constant, and answers 200 with the plant: no
// validation and no logging.
//
// `baseline-server.mjs PORT`: the baseline, which stores nothing.
// `baseline-server.mjs PORT sqlite:FILE` or `... PORT postgres://...`: the
// durable floor, which also stores every plant before answering, in a store
// made by the service's own migrations (the benchmark's fresh store), with the
// same durable group commit as the service: on SQLite, WAL with
// synchronous=FULL and one transaction (one fsync) for the creates read in
// one turn of the event loop; on PostgreSQL, one multi-row INSERT a batch,
// several batches in flight. No durable service can be faster on the
// machine, so the floor shows how much of the gap to the baseline is the
// store's and how much the service's. It writes with its own few lines
// rather than the service's store and GroupCommit on purpose: the least
// code that makes a write durable bounds every implementation of it.
import { createServer } from 'node:http';
import { FLOOR_INSERT_PLANTS } from './floor-insert.mjs';

const [port = '8090', databaseUrl] = process.argv.slice(2);
const expected = `Bearer ${process.env.BASELINE_TOKEN ?? 'ps_baseline'}`;
const store = databaseUrl === undefined ? undefined : groupCommit(await openWriter(databaseUrl));

createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    // The request's id is echoed, as the service does: the benchmark's load script times each request by it.
    const requestId = request.headers['x-request-id'] ?? '';
    if (request.headers.authorization !== expected) {
      response.writeHead(401, { 'content-type': 'application/json', 'x-request-id': requestId }).end('{"error":401,"message":"unauthorized"}');
      return;
    }
    const plant = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const body = JSON.stringify(plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag });
    const answer = () =>
      response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'x-request-id': requestId }).end(body);
    if (store === undefined) answer();
    else store(plant, answer);
  });
}).listen(Number(port), '127.0.0.1', () => console.log(`${store === undefined ? 'baseline' : 'durable floor'} listening on ${port}`));

/** A writer of batches: `commit(plants)` resolves once they are durable; `concurrency` batches at once. */
async function openWriter(url) {
  if (url.startsWith('sqlite:')) {
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(url.slice('sqlite:'.length));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('cache_size = -2048');
    const insert = db.prepare('INSERT INTO plants (id, name, tag, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING');
    const write = db.transaction((plants) => {
      const now = Date.now();
      for (const plant of plants) insert.run(BigInt(plant.id), plant.name, plant.tag ?? null, now);
    });
    return { concurrency: 1, commit: async (plants) => write.immediate(plants) };
  }
  const { default: pg } = await import('pg');
  // The service's default pool, and as many batches in flight as it allows.
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  const insert = {
    name: 'floor-insert-plants',
    text: FLOOR_INSERT_PLANTS,
  };
  return {
    concurrency: 9,
    commit: (plants) =>
      pool.query({ ...insert, values: [plants.map((plant) => String(plant.id)), plants.map((plant) => plant.name), plants.map((plant) => plant.tag ?? null)] }),
  };
}

/**
 * Group commit: creates queue while `concurrency` batches are in flight, and
 * the queue is committed in the turn of the event loop after they arrived.
 * `store(plant, answer)` calls `answer` once the plant's batch is durable.
 */
function groupCommit({ concurrency, commit }) {
  let queue = [];
  let inFlight = 0;
  let scheduled = false;
  const schedule = () => {
    if (scheduled || inFlight >= concurrency || queue.length === 0) return;
    scheduled = true;
    setImmediate(flush);
  };
  const flush = async () => {
    scheduled = false;
    const batch = queue;
    queue = [];
    inFlight += 1;
    await commit(batch.map(({ plant }) => plant));
    inFlight -= 1;
    for (const { answer } of batch) answer();
    schedule();
  };
  return (plant, answer) => {
    queue.push({ plant, answer });
    schedule();
  };
}
