import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { postPlant, runCli, startServer } from '../helpers/processes.js';
import { tempDir } from '../helpers/test-app.js';

test('kill -9 right after a 200 never loses the plant', async (t) => {
  const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'p.db')}` };
  const token = (await runCli(['token', 'create', '--name', 'ci'], env)).stdout.trim();
  const acknowledged: string[] = [];
  for (let round = 0; round < 3; round++) {
    const server = await startServer(t, env);
    // Many creates in flight at once; the server is killed the moment the last answer arrives.
    const bodies = Array.from({ length: 50 }, (_, i) => `{"id":${9007199254740993n + BigInt(round * 100 + i)},"name":"round ${round}","tag":"t${i}"}`);
    const responses = await Promise.all(bodies.map((body) => postPlant(server.url, token, body)));
    server.child.kill('SIGKILL');
    responses.forEach((response, i) => {
      assert.equal(response.status, 200);
      acknowledged.push(bodies[i]!);
    });
    await server.stop('SIGKILL');
  }
  const exported = await runCli(['plants', 'export'], env);
  assert.equal(exported.code, 0);
  assert.deepEqual(exported.stdout.trimEnd().split('\n'), [...acknowledged].sort(byId));
});

function byId(a: string, b: string): number {
  const id = (line: string) => BigInt(/"id":(-?\d+)/.exec(line)![1]!);
  return id(a) < id(b) ? -1 : id(a) > id(b) ? 1 : 0;
}

test('concurrent posts of one id over real connections never both create', async (t) => {
  const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'p.db')}` };
  const token = (await runCli(['token', 'create', '--name', 'ci'], env)).stdout.trim();
  const server = await startServer(t, env);
  const responses = await Promise.all(
    Array.from({ length: 30 }, (_, i) => postPlant(server.url, token, `{"id":-9223372036854775808,"name":"n${i % 3}"}`)),
  );
  await server.stop();
  const exported = (await runCli(['plants', 'export'], env)).stdout.trimEnd().split('\n');
  assert.equal(exported.length, 1);
  const winner = JSON.parse(exported[0]!.replace(/"id":-?\d+/, '"id":0')).name as string;
  responses.forEach((response, i) => assert.equal(response.status, `n${i % 3}` === winner ? 200 : 409));
});

test('a body over the limit is answered 413 without the rest being read', async (t) => {
  const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'p.db')}` };
  const token = (await runCli(['token', 'create', '--name', 'ci'], env)).stdout.trim();
  const server = await startServer(t, env);
  const { hostname, port } = new URL(server.url);
  const { connect } = await import('node:net');
  const socket = connect(Number(port), hostname);
  // Announce 100 MiB, send a few bytes, and never send the rest.
  socket.write(
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${100 * 1024 * 1024}\r\n\r\n{"id":1,`,
  );
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  await new Promise((resolve) => socket.on('close', resolve));
  assert.match(received, /^HTTP\/1\.1 413 /);
  assert.match(received, /\r\nconnection: close\r\n/i);
  assert.ok(received.endsWith('{"error":413,"message":"The request body is too large: the limit is set by BODY_LIMIT"}'));
});
