// The ceilings the service is measured against: Node's own HTTP server doing
// the least a plant store must do. It reads the body, parses the JSON,
// compares the bearer token to a constant, and answers 200 with the plant: no
// validation and no logging.
//
// `baseline-server.mjs PORT`: the baseline, which stores nothing.
// `baseline-server.mjs PORT FILE`: the durable floor, which also stores every
// plant in the SQLite file FILE before answering, with the same durable group
// commit as the service (WAL, synchronous=FULL, one transaction and one fsync
// for the creates read in one turn of the event loop). No durable service can
// be faster on the machine, so the floor shows how much of the gap to the
// baseline is the disk's and how much the service's.
import { createServer } from 'node:http';

const [port = '8090', durableFile] = process.argv.slice(2);
const expected = `Bearer ${process.env.BASELINE_TOKEN ?? 'ps_baseline'}`;
const store = durableFile === undefined ? undefined : await groupCommit(durableFile);

createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    if (request.headers.authorization !== expected) {
      response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":401,"message":"unauthorized"}');
      return;
    }
    const plant = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const body = JSON.stringify(plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag });
    const answer = () =>
      response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
    if (store === undefined) answer();
    else store(plant, answer);
  });
}).listen(Number(port), '127.0.0.1', () => console.log(`${store === undefined ? 'baseline' : 'durable floor'} listening on ${port}`));

/** `store(plant, answer)`: `answer` is called once the plant's transaction is on disk. */
async function groupCommit(file) {
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('cache_size = -2048');
  db.exec('CREATE TABLE IF NOT EXISTS plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT, created_at INTEGER NOT NULL) STRICT');
  const insert = db.prepare('INSERT INTO plants (id, name, tag, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING');
  const write = db.transaction((batch) => {
    const now = Date.now();
    for (const { plant } of batch) insert.run(BigInt(plant.id), plant.name, plant.tag ?? null, now);
  });
  let queue = [];
  const flush = () => {
    const batch = queue;
    queue = [];
    write.immediate(batch);
    for (const { answer } of batch) answer();
  };
  return (plant, answer) => {
    if (queue.push({ plant, answer }) === 1) setImmediate(flush);
  };
}
