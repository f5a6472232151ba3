import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { RECURRING_WARNING_INTERVAL_MS } from '../../src/app.js';
import { errorCatalogue } from '../../src/errors.js';
import { REFUSED_LINGER_MS } from '../../src/http/server/connections-per-address.js';
import { sqlite } from '../helpers/backends.js';
import { createToken, startServer } from '../helpers/processes.js';
import { type RawConnection, rawConnection } from '../helpers/raw-http.js';
import { until } from '../helpers/until.js';

/*
 * MAX_CONNECTIONS_PER_ADDRESS over real TCP: the clients are other
 * loopback addresses (the whole of 127.0.0.0/8 is this machine), each
 * connection bound to its own with `localAddress`.
 */
const CLIENT = '127.0.0.2';
const OTHER = '127.0.0.3';
const PROXY = '127.0.0.4';

const HEALTH = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';
const REFUSAL_LINE = 'connection refused: its address holds MAX_CONNECTIONS_PER_ADDRESS';

async function setUp(t: TestContext, env: Record<string, string>) {
  const database = { DATABASE_URL: await sqlite.freshUrl(t) };
  const token = await createToken(database, 'ci');
  const server = await startServer(t, { ...database, ...env });
  const { hostname, port } = new URL(server.url);
  // One that stays half-open or is cut by the server while it sends ignores its socket errors.
  const open = (from: string, { allowHalfOpen = false } = {}) =>
    rawConnection(Number(port), hostname, { localAddress: from, allowHalfOpen, ignoreErrors: allowHalfOpen });
  /** A connection from `from` that the server has served once, so it surely counts it; kept open. */
  const held = async (from: string): Promise<RawConnection> => {
    const connection = open(from);
    connection.socket.write(HEALTH);
    await until(`a connection from ${from} is served`, () => connection.received().endsWith('{"status":"ok"}'));
    return connection;
  };
  /** Whether a new connection from `from` is served now; it is closed after its answer either way. */
  const served = async (from: string): Promise<boolean> => {
    const connection = open(from);
    connection.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await connection.closed;
    return connection.received().startsWith('HTTP/1.1 200 OK');
  };
  const refusedCount = async (from: string) => {
    const metrics = open(from);
    metrics.socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await metrics.closed;
    return Number(/^plantstore_connections_refused_total\{limit="per_address"\} (\d+)$/m.exec(metrics.received())?.[1] ?? 0);
  };
  return { token, server, open, held, served, refusedCount };
}

/** The answer's head and its body as JSON. */
function parseAnswer(received: string): { head: string; body: unknown } {
  const [head = '', body = ''] = received.split('\r\n\r\n');
  return { head, body: JSON.parse(body) };
}

test('an address holding MAX_CONNECTIONS_PER_ADDRESS connections is answered 429 and closed on the next, while another address is served', async (t) => {
  const { token, server, open, held, refusedCount } = await setUp(t, { MAX_CONNECTIONS_PER_ADDRESS: '2' });
  const share = [await held(CLIENT), await held(CLIENT)];

  const firstRefusal = Date.now();
  for (let i = 0; i < 3; i++) {
    const refused = open(CLIENT);
    refused.socket.write(HEALTH);
    // Closed by the server after its answer, never reset: rawConnection fails the test on a socket error.
    await refused.closed;
    const { head, body } = parseAnswer(refused.received());
    assert.match(head, /^HTTP\/1\.1 429 Too Many Requests\r\n/);
    assert.match(head, /\r\nConnection: close(\r\n|$)/);
    assert.match(head, /\r\nretry-after: 1(\r\n|$)/);
    assert.deepEqual(body, { error: 429, message: errorCatalogue.TOO_MANY_CONNECTIONS.message, code: 'TOO_MANY_CONNECTIONS' });
  }
  // A refused connection cannot be held instead, by a client that never closes its side and keeps
  // sending a byte at a time: the server closes it within the linger, and the next byte is reset.
  const trickling = open(CLIENT, { allowHalfOpen: true });
  const trickle = setInterval(() => trickling.socket.writable && trickling.socket.write('G'), 50);
  const opened = Date.now();
  await trickling.closed;
  clearInterval(trickle);
  const lingered = Date.now() - opened;
  assert.ok(lingered >= REFUSED_LINGER_MS - 50 && lingered < REFUSED_LINGER_MS + 2000, `the refused connection closed after ${lingered} ms`);
  assert.match(trickling.received(), /^HTTP\/1\.1 429 /);
  const refusalsSpan = Date.now() - firstRefusal;

  // Another address is served meanwhile: a create, over a connection of its own.
  const other = open(OTHER);
  const plant = '{"id":1,"name":"Fern"}';
  other.socket.write(
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${plant.length}\r\nConnection: close\r\n\r\n${plant}`,
  );
  await other.closed;
  assert.match(other.received(), /^HTTP\/1\.1 200 OK\r\n/);
  assert.ok(other.received().endsWith('{"name":"Fern"}'));
  assert.equal(await refusedCount(OTHER), 4, 'each refusal is counted');
  for (const connection of share) assert.equal(connection.socket.destroyed, false, 'the connections within the share stay open');

  const stopped = await server.stop();
  assert.equal(stopped, 0);
  const lines = server.logs.filter((line) => line['msg'] === REFUSAL_LINE);
  // One line for the burst, however many refusals: at most one per interval.
  assert.ok(lines.length >= 1 && lines.length <= 1 + Math.floor(refusalsSpan / RECURRING_WARNING_INTERVAL_MS), `${lines.length} lines for 4 refusals`);
  assert.deepEqual(
    { level: lines[0]!['level'], ip: lines[0]!['ip'], key: lines[0]!['key'], limit: lines[0]!['limit'], unlogged: lines[0]!['unlogged'] },
    { level: 40, ip: CLIENT, key: CLIENT, limit: 2, unlogged: 0 },
  );
});

test('a connection that closes gives its place back, whichever side closes it and however', async (t) => {
  const { held, served } = await setUp(t, { MAX_CONNECTIONS_PER_ADDRESS: '2' });
  const share = [await held(CLIENT), await held(CLIENT)];
  assert.equal(await served(CLIENT), false, 'the share is full');

  const closings: [string, (connection: RawConnection) => void][] = [
    ['the client ends it', (connection) => connection.socket.end()],
    ['the client resets it', (connection) => connection.socket.resetAndDestroy()],
    ['the server closes it after an answer that says Connection: close', (connection) => connection.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')],
    ['the server answers a malformed request 400 and closes it', (connection) => connection.socket.write('NOT HTTP\r\n\r\n')],
  ];
  for (const [how, close] of closings) {
    close(share.shift()!);
    await until(`a new connection is served once ${how}`, () => served(CLIENT));
    share.push(await held(CLIENT));
    assert.equal(await served(CLIENT), false, `the share is full again after ${how}`);
  }

  // The server closes an idle one after KEEP_ALIVE_TIMEOUT_MS (and node:http's second more).
  const idle = await setUp(t, { MAX_CONNECTIONS_PER_ADDRESS: '1', KEEP_ALIVE_TIMEOUT_MS: '1000' });
  await idle.held(CLIENT);
  await until('a new connection is served once the server closed the idle one', () => idle.served(CLIENT));
});

test('the proxies of TRUST_PROXY are exempt, and MAX_CONNECTIONS_PER_ADDRESS=0 limits no address', async (t) => {
  const proxied = await setUp(t, { MAX_CONNECTIONS_PER_ADDRESS: '2', TRUST_PROXY: PROXY });
  for (let i = 0; i < 5; i++) await proxied.held(PROXY);
  await proxied.held(CLIENT);
  await proxied.held(CLIENT);
  assert.equal(await proxied.served(CLIENT), false, 'an address not in TRUST_PROXY is limited');

  // More than the default share, 100, from one address.
  const unlimited = await setUp(t, { MAX_CONNECTIONS_PER_ADDRESS: '0' });
  const many = await Promise.all(Array.from({ length: 105 }, () => unlimited.held(CLIENT)));
  assert.equal(await unlimited.served(CLIENT), true);
  assert.equal(await unlimited.refusedCount(OTHER), 0);
  assert.ok(many.every((connection) => !connection.socket.destroyed));
});

test('a MAX_CONNECTIONS the per-address limit is not below is warned of at start', async (t) => {
  const { server } = await setUp(t, { MAX_CONNECTIONS: '20' });
  const warning = server.logs.find((line) => String(line['msg']).startsWith('MAX_CONNECTIONS_PER_ADDRESS is not below MAX_CONNECTIONS'));
  assert.deepEqual({ level: warning?.['level'], maxConnections: warning?.['maxConnections'], maxConnectionsPerAddress: warning?.['maxConnectionsPerAddress'] }, {
    level: 40,
    maxConnections: 20,
    maxConnectionsPerAddress: 100,
  });
  const { server: fine } = await setUp(t, { MAX_CONNECTIONS: '20', MAX_CONNECTIONS_PER_ADDRESS: '4' });
  assert.ok(!fine.logs.some((line) => String(line['msg']).startsWith('MAX_CONNECTIONS_PER_ADDRESS')));
});
