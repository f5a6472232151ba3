import assert from 'node:assert/strict';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { FETCH_MAX_BYTES, keySetAt, keySetFile, KeySetSourceError } from '../../../src/tokens/jwt/key-set-source.js';
import { tempDir } from '../../helpers/temp-dir.js';

// The key set's failures, each a KeySetSourceError whose message an operator
// reads in the log: the JWT is then answered 503, and no key is made up.

/** A server answering every GET with `answer`; its URL. */
async function serving(t: TestContext, answer: (response: http.ServerResponse) => void): Promise<string> {
  const server = http.createServer((_request, response) => answer(response));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
}

const soon = () => AbortSignal.timeout(5000);

async function refusal(load: Promise<unknown>): Promise<string> {
  const error = await load.then(
    () => assert.fail('the key set was accepted'),
    (thrown: unknown) => thrown,
  );
  assert.ok(error instanceof KeySetSourceError, String(error));
  return error.message;
}

test('a key set whose Content-Length is over the limit is refused before its body is read', async (t) => {
  const url = await serving(t, (response) => {
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(FETCH_MAX_BYTES + 1) });
    // A first chunk only: a reader that waited for the announced body would wait until its deadline.
    response.write(Buffer.alloc(1024, 0x20));
  });
  const started = performance.now();
  assert.equal(await refusal(keySetAt(url).load(soon())), `${url} is larger than ${FETCH_MAX_BYTES} bytes`);
  assert.ok(performance.now() - started < 4000, 'refused on its header, not at the deadline');
});

test('a key set that is not JSON is refused, naming where it came from', async (t) => {
  const url = await serving(t, (response) => response.writeHead(200, { 'content-type': 'application/json' }).end('<html>sign in</html>'));
  assert.equal(await refusal(keySetAt(url).load(soon())), `${url} is not JSON`);
});

test('a key set file that cannot be read, or is not JSON, is refused with the reason', async (t) => {
  const missing = join(tempDir(t), 'absent.json');
  assert.match(await refusal(keySetFile(missing).load(soon())), new RegExp(`^cannot read ${missing}: ENOENT`));

  const garbled = join(tempDir(t), 'garbled.json');
  writeFileSync(garbled, '{"keys": [');
  assert.equal(await refusal(keySetFile(garbled).load(soon())), `${garbled} is not JSON`);
  // A folder in place of the file: unreadable as a file, whoever runs the server.
  const directory = tempDir(t);
  assert.match(await refusal(keySetFile(directory).load(soon())), new RegExp(`^cannot read ${directory}: EISDIR`));
});
