import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { test } from 'node:test';
import { sqlite } from '../helpers/backends.js';
import { freshPostgresDatabase, POSTGRES_SKIP_REASON, postgresReachable } from '../helpers/postgres.js';
import { type CliResult, createToken, runInProcess, type ServerProcess, startServer } from '../helpers/processes.js';
import { requireOrSkip } from '../helpers/require-or-skip.js';
import { until, within } from '../helpers/until.js';

/** RATE_LIMIT of the shared-quota tests: 100 creates an hour, so nothing refills while a test runs (a unit every 36 s). */
const QUOTA = 100;
const DEFAULT_POLICY = `"default";q=${QUOTA};w=3600`;
/** Creates sent against the quota: three times it, so that a quota counted once a process (or instance) shows as ~200 allowed. */
const CREATES = 3 * QUOTA;
/** Concurrent keep-alive connections the creates go over. */
const CONNECTIONS = 8;
/** One quota across processes holds within ±10 %: a take leaves at most a slice (a fiftieth) in each process's hand. */
const FEWEST_ALLOWED = 90;
const MOST_ALLOWED = 110;
/** The bound of one request, and of a whole burst of creates. */
const REQUEST_TIMEOUT_MS = 10_000;
const BURST_TIMEOUT_MS = 60_000;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** POST /plants with `id` over `agent`'s connection (keep-alive), bounded by REQUEST_TIMEOUT_MS. */
function postOver(agent: Agent, url: string, token: string, id: number): Promise<Answer> {
  const body = JSON.stringify({ id, name: `q${id}` });
  return new Promise((resolve, reject) => {
    const outgoing = request(
      `${url}/plants`,
      {
        method: 'POST',
        agent,
        timeout: REQUEST_TIMEOUT_MS,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (incoming) => {
        let text = '';
        incoming.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        incoming.on('end', () => resolve({ status: incoming.statusCode!, headers: incoming.headers, body: text }));
        incoming.on('error', reject);
      },
    );
    outgoing.on('timeout', () => outgoing.destroy(new Error(`POST /plants id ${id} had no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/**
 * Sends `CREATES` creates with distinct ids over CONNECTIONS concurrent
 * loops, each with keep-alive connections of its own (one an instance):
 * create `i` goes to `urls[i % urls.length]`, so they are spread evenly.
 */
async function burst(urls: readonly string[], token: string): Promise<Answer[]> {
  const answers: Answer[] = new Array(CREATES);
  const agents: Agent[] = [];
  let next = 0;
  const loop = async () => {
    const mine = urls.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
    agents.push(...mine);
    for (let i = next++; i < CREATES; i = next++) answers[i] = await postOver(mine[i % urls.length]!, urls[i % urls.length]!, token, i + 1);
  };
  try {
    await within(`${CREATES} creates are answered`, Promise.all(Array.from({ length: CONNECTIONS }, loop)), BURST_TIMEOUT_MS);
  } finally {
    for (const agent of agents) agent.destroy();
  }
  return answers;
}

/**
 * The shared quota's verdict on a burst: between 90 and 110 allowed, every
 * other create refused as RATE_LIMITED with Retry-After, every answer under
 * the default policy. Resolves how many were allowed.
 */
function assertOneQuota(answers: readonly Answer[]): number {
  let allowed = 0;
  answers.forEach((answer, i) => {
    const what = `create ${i + 1}: ${answer.status} ${answer.body}`;
    assert.equal(answer.headers['ratelimit-policy'], DEFAULT_POLICY, what);
    const fields = /^"default";r=(\d+);t=(\d+)$/.exec(String(answer.headers['ratelimit']));
    assert.ok(fields !== null, `${what}: RateLimit ${String(answer.headers['ratelimit'])}`);
    assert.ok(Number(fields[1]) <= QUOTA, what);
    if (answer.status === 200) {
      allowed += 1;
      assert.equal(answer.headers['retry-after'], undefined, what);
      return;
    }
    assert.equal(answer.status, 429, what);
    assert.equal((JSON.parse(answer.body) as { code: string }).code, 'RATE_LIMITED', what);
    assert.match(String(answer.headers['retry-after']), /^[1-9]\d*$/, what);
    assert.equal(fields[1], '0', `${what}: a refused create has nothing remaining`);
  });
  assert.ok(
    allowed >= FEWEST_ALLOWED && allowed <= MOST_ALLOWED,
    `${allowed} of ${CREATES} creates were allowed under RATE_LIMIT=${QUOTA}/1h; one quota allows ${FEWEST_ALLOWED} to ${MOST_ALLOWED}`,
  );
  return allowed;
}

/** The plants in the store: exactly the allowed creates, none refused. */
async function storedPlants(env: Record<string, string>): Promise<number> {
  const exported = await runInProcess(['plants', 'export'], env);
  assert.equal(exported.code, 0, exported.stderr);
  return exported.stdout.trimEnd().split('\n').filter((line) => line !== '').length;
}

const accessLines = (server: ServerProcess) => server.logs.filter((line) => line['msg'] === 'request');

test('WORKERS=2 on one SQLite store enforce one quota', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const token = await createToken(env, 'shared-sqlite');
  const server = await startServer(t, { ...env, WORKERS: '2', RATE_LIMIT: `${QUOTA}/1h` });
  const listening = () => server.logs.filter((line) => String(line['msg']).startsWith('Server listening at'));
  await until('two workers listen', () => listening().length === 2);
  const workers = new Set(listening().map((line) => line['pid']));
  assert.equal(workers.size, 2);

  const answers = await burst([server.url], token);
  const allowed = assertOneQuota(answers);

  await until(`the ${CREATES} access lines are written`, () => accessLines(server).length >= CREATES);
  const lines = accessLines(server);
  assert.equal(lines.length, CREATES);
  assert.deepEqual(new Set(lines.map((line) => line['pid'])), workers, 'both workers served creates');
  for (const pid of workers) {
    const served = lines.filter((line) => line['pid'] === pid);
    assert.ok(served.some((line) => line['status'] === 200), `worker ${String(pid)} allowed some creates: the quota is shared, not one worker's`);
  }
  assert.equal(lines.filter((line) => line['rateLimit'] === 'default').length, CREATES - allowed, 'each refusal is logged under the default policy');
  assert.equal(await storedPlants(env), allowed, 'only the allowed creates are stored');
  assert.equal(await server.stop('SIGTERM'), 0);
});

test('two instances on one PostgreSQL database enforce one quota', async (t) => {
  if (!requireOrSkip(t, POSTGRES_SKIP_REASON, await postgresReachable())) return;
  const env = { DATABASE_URL: await freshPostgresDatabase(t) };
  // The first instance makes the schema; the second then finds it, as a rolling start would.
  const a = await startServer(t, { ...env, RATE_LIMIT: `${QUOTA}/1h` });
  const b = await startServer(t, { ...env, RATE_LIMIT: `${QUOTA}/1h` });
  assert.notEqual(a.url, b.url);
  const token = await createToken(env, 'shared-postgres');

  const answers = await burst([a.url, b.url], token);
  const allowed = assertOneQuota(answers);
  for (const [index, server] of [a, b].entries()) {
    const mine = answers.filter((_, i) => i % 2 === index);
    assert.equal(mine.length, CREATES / 2);
    assert.ok(mine.some((answer) => answer.status === 200), `instance ${index + 1} allowed some creates: the quota is shared, not one instance's`);
    await until(`instance ${index + 1} wrote its access lines`, () => accessLines(server).length >= CREATES / 2);
  }
  assert.equal(await storedPlants(env), allowed, 'only the allowed creates are stored');
  await Promise.all([a.stop('SIGTERM'), b.stop('SIGTERM')]);
});

test('token update takes effect on running servers', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const token = await createToken(env, 'tuned');
  const server = await startServer(t, env);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());
  let id = 0;
  const create = () => postOver(agent, server.url, token, ++id);
  const TOKEN_POLICY = '"token";q=2;w=3600';

  const unlimited = await create();
  assert.equal(unlimited.status, 200, unlimited.body);
  assert.equal(unlimited.headers['ratelimit-policy'], undefined, 'no policy: no RateLimit fields');
  assert.equal(unlimited.headers['ratelimit'], undefined);

  /**
   * Sends creates, 50 ms apart, while `bin/plantstore token update NAME ...args`
   * runs and after, until `done` holds of an answer; bounded by 5 s past the
   * command's exit. Resolves that answer and how long after the command
   * exited it came (negative when before: the update is committed first).
   * Creating all along keeps the server's verdict on the token cached, so
   * this measures a cached verdict being looked up again, not a cold one.
   */
  const updateAndPoll = async (args: readonly string[], what: string, done: (answer: Answer) => boolean) => {
    let exited: { at: number; result?: CliResult; error?: unknown } | undefined;
    // runCli is bounded itself (60 s): `exited` is set either way.
    const command = runInProcess(['token', 'update', 'tuned', ...args], env).then(
      (result) => (exited = { at: Date.now(), result }),
      (error: unknown) => (exited = { at: Date.now(), error }),
    );
    const commandSucceeded = (settled: NonNullable<typeof exited>) => {
      if (settled.error !== undefined) throw settled.error;
      assert.equal(settled.result!.code, 0, `token update ${args.join(' ')}: ${settled.result!.stderr}`);
      return settled.at;
    };
    for (;;) {
      const answer = await create();
      const answeredAt = Date.now();
      if (done(answer)) return { answer, afterMs: answeredAt - commandSucceeded(await command) };
      if (exited !== undefined && answeredAt - commandSucceeded(exited) > 5000) {
        throw new Error(`timed out 5000 ms after token update ${args.join(' ')} waiting until ${what}; last answer ${answer.status} ${JSON.stringify(answer.headers)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  const first = await updateAndPoll(['--rate-limit', '2/1h'], 'the running server applies the token policy', (answer) => answer.headers['ratelimit-policy'] !== undefined);
  assert.ok(first.afterMs <= 2000, `the token's new policy came ${first.afterMs} ms after token update (TOKEN_CACHE_TTL_MS is 500)`);
  assert.equal(first.answer.headers['ratelimit-policy'], TOKEN_POLICY);
  assert.equal(first.answer.status, 200, first.answer.body);
  assert.equal(first.answer.headers['ratelimit'], '"token";r=1;t=1800');

  // The quota is 2: the first answer under it took one, the next takes the other, and then none is left.
  const second = await create();
  assert.equal(second.status, 200, second.body);
  assert.equal(second.headers['ratelimit-policy'], TOKEN_POLICY);
  assert.match(String(second.headers['ratelimit']), /^"token";r=0;t=\d+$/);
  const refused = await create();
  assert.equal(refused.status, 429, refused.body);
  assert.equal((JSON.parse(refused.body) as { code: string }).code, 'RATE_LIMITED');
  assert.equal(refused.headers['ratelimit-policy'], TOKEN_POLICY);
  assert.match(String(refused.headers['ratelimit']), /^"token";r=0;t=\d+$/);
  assert.match(String(refused.headers['retry-after']), /^[1-9]\d*$/);

  const free = await updateAndPoll(['--no-rate-limit'], 'the running server drops the token policy', (answer) => answer.headers['ratelimit-policy'] === undefined);
  assert.ok(free.afterMs <= 2000, `dropping the token's policy came ${free.afterMs} ms after token update (TOKEN_CACHE_TTL_MS is 500)`);
  assert.equal(free.answer.status, 200, free.answer.body);
  assert.equal(free.answer.headers['ratelimit'], undefined);
  assert.equal(free.answer.headers['retry-after'], undefined);
  assert.equal(await server.stop('SIGTERM'), 0);
});
