// Runs alone: it measures how far a flood grows the server's memory, and counts the pauses in its answers.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { type TestContext, test } from 'node:test';
import { sqlite } from '../helpers/backends.js';
import { AUDIENCE, makeKey, startKeySetServer } from '../helpers/key-set-server.js';
import { BIN_NODE_FLAGS, createToken, type ServerProcess, startServer } from '../helpers/processes.js';
import { until, within } from '../helpers/until.js';

/** What a flood may add to the server's resident memory, unless it says otherwise. */
const MAX_GROWTH_MIB = 40;
/** The token memory's lifetime in these tests, the most TOKEN_CACHE_TTL_MS allows: a valid token in use is looked up again every half of it. */
const TTL_MS = 1000;
/** Requests in flight at once, each on its own keep-alive connection. */
const CONNECTIONS = 8;
/** Requests of the flood's kind sent before the memory is first measured, so that it includes what serving them needs at all. */
const WARM_UP = 300;

function residentMiB(server: ServerProcess): number {
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))?.[1];
  return Number(kib) / 1024;
}

/** Store token lookups so far, by outcome, as GET /metrics shows them. */
async function lookups(server: ServerProcess): Promise<{ found: number; unknown: number; refresh: number }> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const count = (outcome: string) => Number(new RegExp(`^plantstore_token_lookups_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  return { found: count('found'), unknown: count('unknown'), refresh: count('refresh') };
}

/** V8's own account of its memory, from GET /metrics: heap in use, memory outside the heap, collections. */
async function v8Memory(server: ServerProcess): Promise<string> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const pick = /^(nodejs_heap_size_used_bytes|nodejs_external_memory_bytes|nodejs_gc_duration_seconds_count)(\{[^}]*\})? (\S+)$/gm;
  return [...text.matchAll(pick)].map(([, name, labels = '', value]) => `${name}${labels} ${value}`).join(', ');
}

/** POST /plants with each of `count` tokens, CONNECTIONS at a time over keep-alive; resolves how many answers had each status. */
async function post(server: ServerProcess, count: number, tokenOf: (index: number) => string): Promise<Record<number, number>> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const { hostname, port } = new URL(server.url);
  const statuses: Record<number, number> = {};
  const one = (token: string) =>
    new Promise<number>((resolve, reject) => {
      const body = '{"id":1,"name":"Fern"}';
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(body.length) };
      const sent = request({ agent, host: hostname, port, method: 'POST', path: '/plants', headers, timeout: 30_000 }, (response) => {
        response.resume().on('end', () => resolve(response.statusCode!));
      });
      sent.on('timeout', () => sent.destroy(new Error('no answer within 30 s')));
      sent.on('error', reject);
      sent.end(body);
    });
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (next < count) {
          const status = await one(tokenOf(next++));
          statuses[status] = (statuses[status] ?? 0) + 1;
        }
      }),
    );
  } finally {
    agent.destroy();
  }
  return statuses;
}

interface Flood {
  /** The flood's tokens, each different, all refused. */
  readonly count: number;
  readonly token: (index: number) => string;
  /** What it may add to the resident memory; MAX_GROWTH_MIB unless given. */
  readonly maxGrowthMiB?: number;
}

/**
 * Serves `env` as operators run the service, warms it with a few hundred of
 * the flood's kind of requests and a valid token's, then sends the flood
 * while a client uses its valid token ten times a second. Asserts that every
 * flood request got 401, that the resident memory grew by at most the
 * flood's bound (waiting up to ten seconds for the garbage collector), and
 * that the token in use was answered from memory throughout: no request of
 * it waited for a lookup (only the background refresh looked it up), unless
 * it went unused for longer than its refresh takes to come.
 */
async function assertFloodBounded(t: TestContext, env: Record<string, string>, flood: Flood) {
  const maxGrowthMiB = flood.maxGrowthMiB ?? MAX_GROWTH_MIB;
  const server = await startServer(t, { ...env, TOKEN_CACHE_TTL_MS: String(TTL_MS), AUTH_FAILURE_LIMIT: '1000000' }, [], BIN_NODE_FLAGS);
  const valid = await createToken(env, 'in-use');
  assert.deepEqual(await post(server, WARM_UP, () => valid), { 200: WARM_UP });
  assert.deepEqual(await post(server, WARM_UP, (index) => flood.token(flood.count + index)), { 401: WARM_UP });

  let flooding = true;
  const validStatuses: number[] = [];
  const answeredAt: number[] = [];
  const inUse = (async () => {
    while (flooding) {
      validStatuses.push(...Object.keys(await post(server, 1, () => valid)).map(Number));
      answeredAt.push(Date.now());
      // The pace of a busy client, not a wait for anything.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  await until('the token in use is answered', () => answeredAt.length > 0);
  const before = { rss: residentMiB(server), lookups: await lookups(server), v8: await v8Memory(server), at: Date.now() };
  const statuses = await within('the flood is answered', post(server, flood.count, flood.token), 180_000).finally(() => (flooding = false));
  await inUse;
  const elapsedMs = Date.now() - before.at;
  assert.deepEqual(statuses, { 401: flood.count });
  assert.ok(validStatuses.every((status) => status === 200), `the token in use was answered ${validStatuses.join(', ')}`);

  const after = await lookups(server);
  const waited = after.found - before.lookups.found;
  const pauses = answeredAt.slice(1).filter((at, index) => at - answeredAt[index]! > TTL_MS / 2).length;
  assert.ok(waited <= pauses, `${waited} requests of the token in use waited for a lookup during the flood (it paused ${pauses} times): it was forgotten`);

  const growth = () => residentMiB(server) - before.rss;
  const atEnd = growth();
  await until(`the resident memory is within ${maxGrowthMiB} MiB of where it was`, () => growth() <= maxGrowthMiB, 10_000).catch(() => undefined);
  const settled = growth();
  t.diagnostic(
    `RSS ${before.rss.toFixed(1)} MiB, +${atEnd.toFixed(1)} MiB after ${flood.count} requests in ${elapsedMs} ms, +${settled.toFixed(1)} MiB after GC's chance; ` +
      `the token in use: ${validStatuses.length} requests, ${after.refresh - before.lookups.refresh} refreshes, ${waited} waited for a lookup`,
  );
  assert.ok(settled <= maxGrowthMiB, `the resident memory grew by ${settled.toFixed(1)} MiB (V8 before: ${before.v8}; after: ${await v8Memory(server)})`);
  return { server, lookups: { found: waited, unknown: after.unknown - before.lookups.unknown } };
}

/** Distinct random base64url text of `length` characters. */
const junk = (length: number) => randomBytes(Math.ceil((length * 3) / 4)).toString('base64url').slice(0, length);

test('9,500 requests, each with a different unknown 16,000-character token, add at most 40 MiB: none is looked up or remembered, and a token in use stays remembered', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const { lookups } = await assertFloodBounded(t, env, { count: 9_500, token: () => junk(16_000) });
  assert.equal(lookups.unknown, 0, 'no flood token was looked up');
});

test('12,000 different unknown tokens of the store\'s shape, more than its memory of unknown tokens holds, add at most 40 MiB, and a token in use stays remembered', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const { lookups } = await assertFloodBounded(t, env, { count: 12_000, token: () => `ps_${junk(43)}` });
  assert.equal(lookups.unknown, 12_000, 'each was looked up once');
});

/**
 * Each JWT is checked, its signature with WebCrypto, and that makes garbage
 * outside V8's heap as well as in it, which waits for V8's next full
 * collection. On Node.js 24 the resident memory grew by 31 to 44 MiB in runs
 * with 9,500 such tokens, and by 35 to 57 MiB with 28,500: garbage, not
 * tokens held, which would have grown it by all of them. So the flood is
 * large enough that holding its tokens (223 MiB of them) would break a bound
 * of a third of that, while V8's timing does not.
 */
const JWT_FLOOD = 28_500;

test('with JWTs accepted, 28,500 different JWT-shaped tokens of 8,192 characters, the longest checked, naming a real key, add less than a third of their size', async (t) => {
  const idp = await startKeySetServer(t);
  const key = await makeKey('ES256');
  idp.publish(key);
  const env = { DATABASE_URL: await sqlite.freshUrl(t), JWT_ISSUER: idp.issuer, JWT_AUDIENCE: AUDIENCE };
  const header = Buffer.from(JSON.stringify({ alg: 'ES256', kid: key.kid, typ: 'at+jwt' })).toString('base64url');
  const jwt = () => `${header}.${junk(8192 - header.length - 2 - 86)}.${junk(86)}`;
  assert.equal(jwt().length, 8192);
  const maxGrowthMiB = (JWT_FLOOD * 8192) / 3 / 2 ** 20;
  const { server } = await assertFloodBounded(t, env, { count: JWT_FLOOD, token: jwt, maxGrowthMiB });
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  assert.match(metrics, new RegExp(`^plantstore_auth_failures_total\\{reason="jwt_signature"\\} ${WARM_UP + JWT_FLOOD}$`, 'm'), 'each was checked, and its signature refused');
});
