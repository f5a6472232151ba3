// Runs alone: each server must acknowledge a least number of creates before its kill, which another file's load would slow.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { createToken, postPlant, runCli, startServer } from '../helpers/processes.js';
import { testBackends } from '../helpers/backends.js';
import { fleetSkipReason, pooledPostgres } from '../helpers/fleet.js';
import { seededRandom } from '../helpers/seeded-random.js';

/** Replay a failure with PLANTSTORE_CRASH_SEED=<the seed printed by the failing run>. */
const SEED = Number(process.env['PLANTSTORE_CRASH_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
const KILLS = Number(process.env['PLANTSTORE_CRASH_KILLS'] ?? 20);
const CLIENTS = 16;

// PgBouncer too where it is installed (the fleet tests say so once when it is not).
const pooled = (await fleetSkipReason()) === undefined ? [pooledPostgres] : [];
for (const backend of [...(await testBackends('the crash test')), ...pooled]) {
  test(`${backend.name}: kill -9 at random moments under concurrent creates loses no acknowledged plant (seed ${SEED})`, async (t) => {
    t.diagnostic(`crash test seed: ${SEED} (replay with PLANTSTORE_CRASH_SEED=${SEED})`);
    const next = seededRandom(SEED);
    const env = { DATABASE_URL: await backend.freshUrl(t) };
    const token = await createToken(env, 'crash');
    const acknowledged = new Map<string, string>();
    let counter = 0n;

    for (let kill = 0; kill < KILLS; kill++) {
      const server = await startServer(t, env);
      let running = true;
      let killed = false;
      const clients = Array.from({ length: CLIENTS }, async () => {
        while (running) {
          const id = (2n ** 53n + counter++).toString();
          const body = `{"id":${id},"name":"plant ${id} ✓","tag":"k${kill}"}`;
          try {
            const response = await postPlant(server.url, token, body);
            if (response.status === 200) acknowledged.set(id, body);
            else assert.fail(`unexpected ${response.status}: ${response.body}`);
          } catch (error) {
            if (error instanceof assert.AssertionError) throw error;
            // A server that dies by itself under load fails the test: only the kill may cut a request.
            assert.ok(killed, `a client saw ${String((error as Error).cause ?? error)} before the kill`);
            return; // The kill cut this request: it was never acknowledged.
          }
        }
      });
      await sleep(20 + Math.floor(next() * 250));
      killed = true;
      const stopped = server.stop('SIGKILL');
      running = false;
      await Promise.all(clients);
      await stopped;
      assert.equal(server.child.signalCode, 'SIGKILL', `server ${kill} was ended by the test's kill, not by itself`);
    }

    const exported = await runCli(['plants', 'export'], env);
    assert.equal(exported.code, 0, exported.stderr);
    const stored = new Map<string, string>();
    for (const line of exported.stdout.trimEnd().split('\n')) {
      const id = /^\{"id":(\d+),/.exec(line)![1]!;
      assert.ok(!stored.has(id), `plant ${id} is stored once`);
      stored.set(id, line);
    }
    assert.ok(acknowledged.size > KILLS * 10, `${acknowledged.size} plants were acknowledged`);
    for (const [id, body] of acknowledged) assert.equal(stored.get(id), body, `acknowledged plant ${id} is stored exactly`);

    if (backend.name === 'sqlite') {
      const db = new Database(env.DATABASE_URL.slice('sqlite:'.length), { readonly: true });
      assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
      db.close();
    }
  });
}
