import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { type TestContext, test } from 'node:test';
import { ACCEPTING_SOCKETS } from '../../src/http/server/acceptors.js';
import { sqlite } from '../helpers/backends.js';
import { createToken, runCli, startServer } from '../helpers/processes.js';
import { connectionRefused, type RawConnection, rawConnection } from '../helpers/raw-http.js';
import { until } from '../helpers/until.js';

/** Connections opened at once: with eight sockets, nearly all are accepted by another one than the server's first. */
const AT_ONCE = 24;

async function serving(t: TestContext, env: Record<string, string> = {}) {
  const database = { DATABASE_URL: await sqlite.freshUrl(t) };
  const token = await createToken(database, 'ci');
  const server = await startServer(t, { ...database, ...env });
  // Every socket is bound before the start line.
  await until('the server says it serves', () => server.logs.some((line) => line['msg'] === 'plantstore serving'));
  const port = Number(new URL(server.url).port);
  const open = () => rawConnection(port, '127.0.0.1', { ignoreErrors: true });
  return { database, token, server, port, open };
}

/** The listening TCP sockets on 127.0.0.1:`port`, from the kernel's table (state 0A is LISTEN). */
function listeningSockets(port: number): number {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .filter((line) => {
      const fields = line.trim().split(/\s+/);
      return fields[1] === local && fields[3] === '0A';
    }).length;
}

test(`the server listens on ${ACCEPTING_SOCKETS} sockets bound with reusePort`, async (t) => {
  const { port } = await serving(t);
  assert.equal(listeningSockets(port), ACCEPTING_SOCKETS);
});

test('MAX_CONNECTIONS counts the connections of every socket: of many opened at once, that many are served', async (t) => {
  const { server, open } = await serving(t, { MAX_CONNECTIONS: '4', MAX_CONNECTIONS_PER_ADDRESS: '0' });
  const connections = Array.from({ length: AT_ONCE }, open);
  for (const connection of connections) connection.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  // A refused connection closes unanswered; a served one answers and stays open.
  const settled = (connection: RawConnection) => connection.received().endsWith('{"status":"ok"}') || connection.socket.destroyed;
  await until('every connection is answered or closed', () => connections.every(settled));
  assert.equal(connections.filter((connection) => connection.received() !== '').length, 4);
  for (const connection of connections) connection.socket.destroy();
  assert.equal(server.child.exitCode, null);
});

test('on SIGTERM the requests in flight on every socket are finished and stored before the exit', async (t) => {
  const { database, token, server, port, open } = await serving(t);
  const connections = Array.from({ length: AT_ONCE }, open);
  const bodies = connections.map((_, i) => `{"id":${i + 1},"name":"in flight ${i + 1}"}`);
  // Each asks for 100-continue, which node:http answers once the application has the request.
  connections.forEach((connection, i) =>
    connection.socket.write(
      `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${bodies[i]!.length}\r\nExpect: 100-continue\r\n\r\n`,
    ),
  );
  await until('the server works on every request', () => connections.every((connection) => connection.received().startsWith('HTTP/1.1 100 Continue')));
  const stopped = server.stop('SIGTERM');
  // The stop has begun once no socket accepts any more.
  await until('new connections are refused', () => connectionRefused(port));
  connections.forEach((connection, i) => connection.socket.write(bodies[i]!));
  await Promise.all(connections.map((connection) => connection.closed));
  for (const [i, connection] of connections.entries()) assert.match(connection.received(), /\r\n\r\nHTTP\/1\.1 200 OK\r\n/, `connection ${i + 1}`);
  assert.equal(await stopped, 0);
  const stored = (await runCli(['plants', 'export'], database)).stdout.trim().split('\n');
  assert.equal(stored.length, AT_ONCE);
});
