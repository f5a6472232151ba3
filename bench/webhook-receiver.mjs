// The webhook receiver of `npm run bench -- --webhook`, in a process of its own
// (bench/webhook-receiver.ts starts it, pinned beside the load generator), so
// that it takes its share of the machine's cores as a receiver on the same
// host would, and its work is not the benchmark's. Plain node:http and
// node:crypto, no framework: its own cost stays small.
//
// It answers every delivery 204 at once, then verifies it as a Standard
// Webhooks receiver does, independently of the service's own signing code,
// and records when the message's plant was committed (the body's timestamp)
// and when its first delivery arrived. The parent talks to it over the IPC
// channel: the secret to verify with, and questions about what arrived. It
// exits when the parent goes away.
import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

/** Standard Webhooks receivers refuse a webhook-timestamp further than this from their clock. */
const TIMESTAMP_TOLERANCE_SECONDS = 5 * 60;
const SECRET_PREFIX = 'whsec_';

/** @type {Buffer | undefined} */
let key;
const counts = { received: 0, valid: 0, invalid: 0, duplicates: 0, lastReceivedAt: 0, firstProblem: /** @type {string | null} */ (null) };
/** Every webhook-id seen, valid or not: a message delivered twice is counted once. */
const seen = new Set();
// A message's plant commit time and its first delivery's arrival, in ms, in arrays that double when full.
let committedAt = new Float64Array(1 << 16);
let arrivedAt = new Float64Array(1 << 16);
let recorded = 0;

const server = createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    const now = Date.now();
    response.writeHead(204).end();
    receive(request.headers, Buffer.concat(chunks), now);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send?.({ type: 'listening', port: server.address().port }));

function receive(headers, body, now) {
  counts.received += 1;
  counts.lastReceivedAt = now;
  const committed = committedTime(body);
  const problem = problemOf(headers, body, committed, now);
  if (problem === undefined) counts.valid += 1;
  else {
    counts.invalid += 1;
    counts.firstProblem ??= problem;
  }
  const id = String(headers['webhook-id']);
  if (seen.has(id)) {
    counts.duplicates += 1;
    return;
  }
  seen.add(id);
  if (committed !== undefined) record(committed, now);
}

/** Why a receiver would refuse this delivery (`committed`: its body's timestamp), or undefined when it verifies. */
function problemOf(headers, body, committed, now) {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') return 'a webhook-id, -timestamp or -signature header is missing';
  if (key === undefined) return 'a delivery came before the secret';
  if (!/^\d+$/.test(timestamp) || Math.abs(now / 1000 - Number(timestamp)) > TIMESTAMP_TOLERANCE_SECONDS) {
    return `webhook-timestamp ${timestamp} is more than ${TIMESTAMP_TOLERANCE_SECONDS} s from the receiver's clock`;
  }
  // The signed content is the body's bytes as they came, not a re-encoding of them.
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
  const verifies = signatures.split(' ').some((signature) => {
    const [version, value = ''] = signature.split(',', 2);
    const given = Buffer.from(value, 'base64');
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!verifies) return 'no v1 signature in webhook-signature verifies with the secret';
  if (committed === undefined) return 'the body has no RFC 3339 timestamp';
  return undefined;
}

/** The body's `timestamp` (when the plant was committed), in ms, or undefined when it has none. */
function committedTime(body) {
  try {
    const time = Date.parse(JSON.parse(body.toString('utf8')).timestamp);
    return Number.isNaN(time) ? undefined : time;
  } catch {
    return undefined;
  }
}

function record(committed, arrived) {
  if (recorded === committedAt.length) {
    committedAt = grown(committedAt);
    arrivedAt = grown(arrivedAt);
  }
  committedAt[recorded] = committed;
  arrivedAt[recorded] = arrived;
  recorded += 1;
}

function grown(array) {
  const bigger = new Float64Array(array.length * 2);
  bigger.set(array);
  return bigger;
}

/**
 * Percentiles of the lag (first arrival minus commit, ms) of the messages committed at or after
 * `committedFrom`. `expected` of them were created: those not delivered count as later than any
 * that were, and a percentile that falls among them is null.
 */
function lagPercentiles(committedFrom, expected, percentiles) {
  const lags = [];
  for (let i = 0; i < recorded; i++) if (committedAt[i] >= committedFrom) lags.push(arrivedAt[i] - committedAt[i]);
  lags.sort((a, b) => a - b);
  const total = Math.max(expected, lags.length);
  // Nearest rank: the smallest lag that at least that share of the messages had.
  const values = percentiles.map((share) => lags[Math.max(1, Math.ceil(share * total)) - 1] ?? null);
  return { delivered: lags.length, values };
}

process.on('message', (message) => {
  if (message.type === 'secret') {
    key = createSecretKey(Buffer.from(message.secret.startsWith(SECRET_PREFIX) ? message.secret.slice(SECRET_PREFIX.length) : message.secret, 'base64'));
    process.send({ id: message.id, answer: null });
  } else if (message.type === 'stats') {
    process.send({ id: message.id, answer: { ...counts, distinct: seen.size } });
  } else if (message.type === 'lag') {
    process.send({ id: message.id, answer: lagPercentiles(message.committedFrom, message.expected, message.percentiles) });
  }
});
process.on('disconnect', () => {
  server.closeAllConnections();
  server.close();
  process.exit(0);
});
