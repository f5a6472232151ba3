import assert from 'node:assert/strict';
import { test } from 'node:test';
import { existingStoreUrl, testBackends } from '../helpers/backends.js';
import { createToken, postPlant, runInProcess, startServer } from '../helpers/processes.js';
import { until } from '../helpers/until.js';

interface ListedToken {
  id: number;
  name: string;
  lastUsedAt: string | null;
}

async function listTokens(env: Record<string, string>): Promise<ListedToken[]> {
  const listed = await runInProcess(['token', 'list', '--json'], env);
  assert.equal(listed.code, 0, listed.stderr);
  return JSON.parse(listed.stdout) as ListedToken[];
}

const lastUseOf = (rows: readonly ListedToken[], name: string) => rows.find((row) => row.name === name)!.lastUsedAt;

for (const backend of await testBackends('token list shows when each token was last used')) {
  test(`${backend.name}: token list shows a token's last use within 15 seconds of a request; a token not used stays null`, async (t) => {
    const env = { DATABASE_URL: await existingStoreUrl(t, backend) };
    const server = await startServer(t, env);
    const used = await createToken(env, 'used');
    await createToken(env, 'unused');
    const sent = Date.now();
    assert.equal((await postPlant(server.url, used, '{"id":1,"name":"Fern"}')).status, 200);
    const answered = Date.now();

    let rows: ListedToken[] = [];
    await until('token list shows the use', async () => lastUseOf((rows = await listTokens(env)), 'used') !== null, 15_000);
    const lastUsedAt = lastUseOf(rows, 'used')!;
    assert.ok(Date.parse(lastUsedAt) >= sent && Date.parse(lastUsedAt) <= answered, `used at ${lastUsedAt}, requested from ${new Date(sent).toISOString()}`);
    assert.equal(lastUseOf(rows, 'unused'), null);

    const table = (await runInProcess(['token', 'list'], env)).stdout.split('\n');
    assert.match(table.find((line) => /^1\s+used\s/.test(line))!, new RegExp(`\\s${lastUsedAt}$`));
    assert.match(table.find((line) => /^2\s+unused\s/.test(line))!, /\s-$/);
  });

  test(`${backend.name}: a server writes the last uses it holds as it stops`, async (t) => {
    const env = { DATABASE_URL: await existingStoreUrl(t, backend) };
    const server = await startServer(t, env);
    const token = await createToken(env, 'ci');
    const sent = Date.now();
    assert.equal((await postPlant(server.url, token, '{"id":1,"name":"Fern"}')).status, 200);
    // Stopped at once, well within the interval of the writes, so the use is written by the stop.
    assert.equal(await server.stop(), 0);
    const lastUsedAt = lastUseOf(await listTokens(env), 'ci');
    assert.ok(lastUsedAt !== null && Date.parse(lastUsedAt) >= sent, `last used ${lastUsedAt}`);
  });
}
