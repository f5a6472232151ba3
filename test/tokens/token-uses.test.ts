import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TokenUse } from '../../src/store/store.js';
import { TOKEN_USE_WRITE_INTERVAL_MS } from '../../src/tokens/token-use-writer.js';
import { storeWith } from '../helpers/store-with.js';
import { testApp } from '../helpers/test-app.js';
import { until } from '../helpers/until.js';

test("many requests with one token cost no store write each: the server writes the token's latest use in one batch every few seconds", async (t) => {
  const writes: TokenUse[][] = [];
  const served = await testApp(t, {
    authFailureLimit: 1000,
    wrapStore: (store) =>
      storeWith(store, {
        async recordTokenUses(uses: readonly TokenUse[]) {
          writes.push([...uses]);
          return store.recordTokenUses(uses);
        },
      }),
  });
  const started = Date.now();
  let lastSent = 0;
  // 400 creates, 8 at a time over keep-alive connections: nearly all are served from the verdict's memory.
  for (let round = 0; round < 50; round++) {
    lastSent = Date.now();
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => served.post({ id: round * 8 + i, name: 'p' })));
    assert.deepEqual(answers.map((answer) => answer.statusCode), Array(8).fill(200));
  }
  const [token] = await served.store.listTokens();

  await until('the latest use is written', () => writes.some((uses) => uses.some((use) => use.at.getTime() >= lastSent)), 15_000);
  const intervals = Math.ceil((Date.now() - started) / TOKEN_USE_WRITE_INTERVAL_MS);
  assert.ok(writes.length <= intervals, `${writes.length} writes for 400 requests over ${intervals} intervals of the writer`);
  for (const uses of writes) assert.deepEqual(uses.map((use) => use.id), [token!.id], 'each write holds the one token once');
  const [stored] = await served.store.listTokens();
  assert.ok(stored!.lastUsedAt!.getTime() >= lastSent, 'the store holds the latest use');
});
