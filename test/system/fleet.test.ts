import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { fillTemplate, fleetSkipReason, freePort, freshPooledDatabase, startNginx } from '../helpers/fleet.js';
import { assertMatches, openApiFile as document, responseSpec } from '../helpers/openapi.js';
import { createToken, postPlant, runCli, type ServerProcess, startServer } from '../helpers/processes.js';
import { sqlite } from '../helpers/backends.js';
import { requireOrSkip } from '../helpers/require-or-skip.js';
import { tempDir } from '../helpers/temp-dir.js';
import { until } from '../helpers/until.js';
import type { TestContext } from 'node:test';

/** Two instances on fixed ports, both through PgBouncer to one database, nginx in front. */
async function fleet(t: TestContext, env: Record<string, string> = {}) {
  const database = { DATABASE_URL: await freshPooledDatabase(t) };
  const ports = [await freePort(), await freePort()] as const;
  const start = (port: number) => startServer(t, { ...database, ...env }, ['--port', String(port)]);
  // Both at once on a fresh database: their migrations race through the pooler.
  const instances: ServerProcess[] = await Promise.all(ports.map(start));
  const url = await startNginx(t, ports);
  const token = await createToken(database, 'fleet');
  return { database, ports, instances, start, url, token };
}

const served = (instance: ServerProcess) => instance.logs.filter((line) => line['msg'] === 'request' && line['method'] === 'POST').length;

const skip = await fleetSkipReason();
if (skip !== undefined) {
  test('the fleet: nginx, two instances, PgBouncer', { skip }, () => undefined);
} else {
  test('through nginx and PgBouncer every answer of POST /plants has the status and shape the document declares', async (t) => {
    const { url, token, instances } = await fleet(t, { BODY_LIMIT: '1024' });
    const cases: { body: string; headers?: Record<string, string>; status: number }[] = [
      { body: '{"id":9007199254740993,"name":"Fern","tag":"leafy"}', status: 200 },
      { body: '{"id":9007199254740993,"name":"Fern","tag":"leafy"}', status: 200 },
      { body: '{"id":9007199254740993,"name":"Rose"}', status: 409 },
      { body: '{"id":3}', status: 400 },
      { body: '{"id":1,"name":"x"}', headers: { authorization: 'Bearer ps_not_a_token' }, status: 401 },
      { body: '{"id":1,"name":"x"}', headers: { 'content-type': 'text/plain' }, status: 415 },
      { body: `{"id":4,"name":"${'x'.repeat(2000)}"}`, status: 413 },
    ];
    for (const { body, headers, status } of cases) {
      const response = await fetch(`${url}/plants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
        body,
      });
      assert.equal(response.status, status, body.slice(0, 40));
      assertMatches(responseSpec('/plants', 'post', status).content['application/json']!.schema, await response.json(), `${status}`);
    }
    const notAllowed = await fetch(`${url}/plants`);
    assert.equal(notAllowed.status, 405);
    assert.equal(notAllowed.headers.get('allow'), 'POST');
    const notFound = await fetch(`${url}/nothing`);
    assert.equal(notFound.status, 404);
    assertMatches(document.components.responses.NotFound.content['application/json'].schema, await notFound.json(), '404');
    for (const instance of instances) assert.equal((await fetch(`${instance.url}/readyz`)).status, 200);

    // The request id a client sends follows the request to the instance and back.
    const traced = await fetch(`${url}/plants`, { method: 'POST', headers: { 'x-request-id': 'trace-me-42' } });
    assert.equal(traced.headers.get('x-request-id'), 'trace-me-42');
    const generated = await fetch(`${url}/plants`, { method: 'POST' });
    assert.match(generated.headers.get('x-request-id') ?? '', /^[0-9a-f]{32}$/, "nginx's own id when the client sent none");
  });

  test('through nginx and PgBouncer one id created on both instances at once is stored once', async (t) => {
    const { database, url, token, instances } = await fleet(t);
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) => postPlant(url, token, `{"id":-9223372036854775808,"name":"n${i % 4}"}`)),
    );
    const exported = (await runCli(['plants', 'export'], database)).stdout.trimEnd().split('\n');
    assert.equal(exported.length, 1);
    const winner = /"name":"(n\d)"/.exec(exported[0]!)![1];
    responses.forEach((response, i) => assert.equal(response.status, `n${i % 4}` === winner ? 200 : 409, `request ${i}`));
    assert.ok(instances.every((instance) => served(instance) > 0), 'both instances answered');

    // Tokens and copy through the pooler too.
    assert.equal((await runCli(['token', 'revoke', 'fleet'], database)).code, 0);
    await until('both instances refuse the revoked token', async () => {
      const statuses = await Promise.all(instances.map((instance) => postPlant(instance.url, token, '{"id":1,"name":"late"}')));
      return statuses.every((response) => response.status === 401);
    });
    const source = await sqlite.freshUrl(t);
    await createToken({ DATABASE_URL: source }, 'copied');
    const copied = await runCli(['copy', '--from', source, '--to', await freshPooledDatabase(t)]);
    assert.equal(copied.code, 0, copied.stderr);
  });

  test('rolling restarts through nginx under load: every create answered 200, none lost, none twice', async (t) => {
    const { database, instances, start, ports, url, token } = await fleet(t, { SHUTDOWN_DELAY_MS: '100' });
    const acknowledged: string[] = [];
    const failures: string[] = [];
    let running = true;
    let next = 2n ** 62n;
    // Node's fetch keeps its connections alive; these clients never retry.
    const clients = Array.from({ length: 16 }, async () => {
      while (running) {
        const id = String(next++);
        try {
          const response = await postPlant(url, token, `{"id":${id},"name":"rolling ${id}"}`);
          if (response.status === 200) acknowledged.push(id);
          else failures.push(`${response.status} ${response.body}`);
        } catch (error) {
          failures.push(`socket error: ${(error as Error).cause ?? error}`);
        }
      }
    });

    for (let round = 0; round < 3; round++) {
      for (const which of [0, 1] as const) {
        const other = instances[1 - which]!;
        const before = served(other);
        await until('the other instance takes traffic through nginx', () => served(other) > before);
        const stopping = Date.now();
        const exitCode = await instances[which]!.stop('SIGTERM');
        assert.equal(exitCode, 0, 'a stopped instance exits 0');
        // nginx's idle keep-alive connections do not hold the stop until the grace period (10 s) ends.
        assert.ok(Date.now() - stopping < 3000, `stopped in ${Date.now() - stopping} ms`);
        instances[which] = await start(ports[which]);
        await until('the restarted instance takes traffic through nginx', () => served(instances[which]!) > 0);
      }
    }
    running = false;
    await Promise.all(clients);

    assert.deepEqual(failures, []);
    assert.ok(acknowledged.length > 100, `${acknowledged.length} creates acknowledged`);
    const stored = (await runCli(['plants', 'export'], database)).stdout.trimEnd().split('\n');
    const ids = stored.map((line) => /^\{"id":(\d+),/.exec(line)![1]!);
    assert.equal(new Set(ids).size, ids.length, 'no plant stored twice');
    const held = new Set(ids);
    for (const id of acknowledged) assert.ok(held.has(id), `acknowledged plant ${id} is stored`);
  });

  test('TRUST_PROXY: the failed-authentication limit counts the address X-Forwarded-For gives, and only behind a trusted proxy', async (t) => {
    const limit = 3;
    const { url, instances } = await fleet(t, { TRUST_PROXY: 'loopback', AUTH_FAILURE_LIMIT: String(limit) });
    const fail = (target: string, address: string) =>
      fetch(`${target}/plants`, {
        method: 'POST',
        headers: { authorization: 'Bearer ps_wrong', 'content-type': 'application/json', 'x-forwarded-for': address },
        body: '{"id":1,"name":"x"}',
      }).then((response) => response.status);

    // Two instances count on their own: at most twice the limit before every one refuses this address.
    const statuses: number[] = [];
    for (let i = 0; i < 2 * limit + 2 && statuses.at(-1) !== 429; i++) statuses.push(await fail(url, '203.0.113.7'));
    assert.equal(statuses.at(-1), 429, `statuses: ${statuses.join(' ')}`);
    assert.equal(await fail(url, '198.51.100.9'), 401, 'another client behind the same proxy is not limited');
    const forwardedLine = () => instances.flatMap((instance) => instance.logs).some((line) => line['msg'] === 'request' && line['ip'] === '198.51.100.9');
    await until('the access line shows the forwarded address', forwardedLine);

    // Straight to an instance without TRUST_PROXY, a forged X-Forwarded-For changes nothing.
    const plain = await startServer(t, { DATABASE_URL: await sqlite.freshUrl(t), AUTH_FAILURE_LIMIT: String(limit) });
    for (let i = 0; i < limit; i++) assert.equal(await fail(plain.url, `192.0.2.${i}`), 401);
    assert.equal(await fail(plain.url, '192.0.2.200'), 429, 'every forged address is the one peer');
    const accessLines = () => plain.logs.filter((line) => line['msg'] === 'request');
    await until('the four access lines are written', () => accessLines().length === limit + 1);
    assert.deepEqual(new Set(accessLines().map((line) => line['ip'])), new Set(['127.0.0.1']));
  });
}

for (const [file, instance] of [
  ['plantstore.service', 'plantstore@8081.service'],
  ['plantstore-deliver.service', 'plantstore-deliver@9101.service'],
] as const) {
  test(`the systemd unit ${file} passes systemd-analyze verify`, (t) => {
    if (!requireOrSkip(t, 'systemd-analyze is not installed (Debian\'s systemd package)', spawnSync('systemd-analyze', ['--version']).error === undefined)) return;
    const unit = join(tempDir(t), instance);
    writeFileSync(unit, fillTemplate(file, { INSTALL_DIR: fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '') }));
    const verified = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' });
    assert.equal(verified.status, 0, verified.stderr);
    assert.equal(verified.stderr.trim(), '', 'no warning');
  });
}
