import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sqlite } from '../helpers/backends.js';
import { createToken, postPlant, runInProcess, startServer } from '../helpers/processes.js';
import { rawExchange } from '../helpers/raw-http.js';

test('kill -9 right after a 200 never loses the plant', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const token = await createToken(env, 'ci');
  // Built in ascending id order, round after round: the order of the export.
  const acknowledged: string[] = [];
  for (let round = 0; round < 3; round++) {
    const server = await startServer(t, env);
    // Many creates in flight at once; the server is killed the moment the last answer arrives.
    const bodies = Array.from({ length: 50 }, (_, i) => `{"id":${9007199254740993n + BigInt(round * 100 + i)},"name":"round ${round}","tag":"t${i}"}`);
    const responses = await Promise.all(bodies.map((body) => postPlant(server.url, token, body)));
    await server.stop('SIGKILL');
    responses.forEach((response, i) => {
      assert.equal(response.status, 200);
      acknowledged.push(bodies[i]!);
    });
  }
  const exported = await runInProcess(['plants', 'export'], env);
  assert.equal(exported.code, 0);
  assert.deepEqual(exported.stdout.trimEnd().split('\n'), acknowledged);
});

test('concurrent posts of one id over real connections never both create', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const token = await createToken(env, 'ci');
  const server = await startServer(t, env);
  const responses = await Promise.all(
    Array.from({ length: 30 }, (_, i) => postPlant(server.url, token, `{"id":-9223372036854775808,"name":"n${i % 3}"}`)),
  );
  await server.stop();
  const exported = (await runInProcess(['plants', 'export'], env)).stdout.trimEnd().split('\n');
  assert.equal(exported.length, 1);
  const winner = (JSON.parse(exported[0]!) as { name: string }).name;
  assert.equal(exported[0], `{"id":-9223372036854775808,"name":${JSON.stringify(winner)}}`, 'the id is stored exactly');
  responses.forEach((response, i) => assert.equal(response.status, `n${i % 3}` === winner ? 200 : 409));
});

test('a body over the limit is answered 413 without the rest being read', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const token = await createToken(env, 'ci');
  const server = await startServer(t, env);
  const { hostname, port } = new URL(server.url);
  // Announce 100 MiB, send a few bytes, and never send the rest.
  const received = await rawExchange(
    Number(port),
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${100 * 1024 * 1024}\r\n\r\n{"id":1,`,
    hostname,
  );
  assert.match(received, /^HTTP\/1\.1 413 /);
  assert.match(received, /\r\nconnection: close\r\n/i);
  assert.ok(received.endsWith('{"error":413,"message":"The request body is too large: the limit is 65536 bytes","code":"BODY_TOO_LARGE"}'));
});
