import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer as createHttpServer, request, type ServerResponse } from 'node:http';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { test, type TestContext } from 'node:test';
import { adoptConnection, answerInFlight, connectionCount, countsConnections } from '../../src/http/server/node-internals.js';

// Each private field of Node.js the service uses, checked on the running line:
// a failure names the field that has gone, and src/http/server/node-internals.ts the code that needs it.

async function listening<T extends Server>(t: TestContext, server: T): Promise<T> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  return server;
}

function connections(server: Server): Promise<number> {
  return new Promise((resolve, reject) => server.getConnections((error, count) => (error ? reject(error) : resolve(count))));
}

test("net.Server's _connections counts its connections", async (t) => {
  const server = await listening(t, createServer());
  assert.ok(countsConnections(server), `net.Server has no _connections on Node.js ${process.versions.node}`);
  const accepted = once(server, 'connection');
  const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
  t.after(() => client.destroy());
  await accepted;
  assert.equal(connectionCount(server), 1, '_connections counts an accepted connection');
  assert.equal(connectionCount(server), await connections(server), '_connections is what getConnections() reports');
});

test("a connection adopted through _connections and _server counts for its new server until it closes", async (t) => {
  const to = await listening(t, createServer());
  let adopted: Socket | undefined;
  const from = await listening(
    t,
    createServer((socket) => {
      adoptConnection(from, to, socket);
      adopted = socket;
    }),
  );
  const client = connect((from.address() as AddressInfo).port, '127.0.0.1');
  await once(client, 'connect');
  while (adopted === undefined) await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual([await connections(from), await connections(to)], [0, 1], 'the new server counts it, the one that accepted it not');
  const closed = once(adopted, 'close');
  client.destroy();
  await closed;
  assert.deepEqual([await connections(from), await connections(to)], [0, 0], "node:net lowers socket._server's _connections when it closes");
});

test("node:http's socket._httpMessage is the answer the connection works on, null between requests", async (t) => {
  let seen: { during: ServerResponse | null; response: ServerResponse; socket: Socket } | undefined;
  const server = await listening(
    t,
    createHttpServer((incoming, response) => {
      seen = { during: answerInFlight(incoming.socket), response, socket: incoming.socket };
      response.end('ok');
    }),
  );
  const answered = new Promise<void>((resolve, reject) => {
    const agent = request({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', agent: false, headers: { connection: 'keep-alive' } }, (response) => {
      response.resume().on('end', resolve);
    });
    agent.on('error', reject).end();
  });
  await answered;
  assert.ok(seen !== undefined);
  assert.equal(seen.during, seen.response, `socket._httpMessage is not the answer in flight on Node.js ${process.versions.node}`);
  assert.equal(answerInFlight(seen.socket), null, 'socket._httpMessage is null once the answer is sent');
});
