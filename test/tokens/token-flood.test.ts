import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { parseDatabaseUrl } from '../../src/config/config.js';
import { openStore } from '../../src/store/open-store.js';
import { generateToken, TOKEN_LENGTH } from '../../src/tokens/api-token.js';
import { issueToken } from '../../src/tokens/issue-token.js';
import { KNOWN_TOKENS, StoreTokenVerifier, UNKNOWN_TOKENS } from '../../src/tokens/store-token-verifier.js';
import { sqlite } from '../helpers/backends.js';

/** A verifier on a real SQLite store holding one token, its clock stopped, its lookups in the store counted. */
async function verifierWithToken(t: TestContext) {
  const store = await openStore({ database: parseDatabaseUrl(await sqlite.freshUrl(t), 'test'), databasePoolSize: 1 });
  t.after(() => store.close());
  const issued = await issueToken(store, { name: 'in-use' });
  assert.ok(issued.issued);
  const lookups = { found: 0, unknown: 0, refresh: 0 };
  const now = Date.now();
  const verifier = new StoreTokenVerifier(store, { ttlMs: 1000, now: () => now, onLookup: (outcome) => lookups[outcome]++ });
  return { verifier, token: issued.token, lookups };
}

test('a flood of unknown tokens, more than twice what either memory holds, never evicts a token in use: it is still answered from memory', async (t) => {
  const { verifier, token, lookups } = await verifierWithToken(t);
  const valid = { valid: true, caller: { name: 'in-use' } };
  assert.deepEqual(await verifier.verify(token), valid);
  assert.deepEqual(verifier.verifyRemembered(token), valid, 'remembered, and now in use');

  const flood = Math.ceil(2.5 * Math.max(KNOWN_TOKENS.maxEntries, UNKNOWN_TOKENS.maxEntries));
  for (let sent = 0; sent < flood; sent += 500) {
    const verdicts = await Promise.all(Array.from({ length: 500 }, () => verifier.verify(generateToken())));
    assert.ok(verdicts.every((verdict) => !verdict.valid && verdict.reason === 'unknown'));
  }
  assert.equal(lookups.unknown, flood, 'each unknown token was looked up');
  assert.deepEqual(verifier.verifyRemembered(token), valid, 'the token in use is still remembered...');
  assert.deepEqual([lookups.found, lookups.refresh], [1, 0], '...and was not looked up again');
});

test('a token not of the shape the service makes is refused as unknown without a lookup', async (t) => {
  const { verifier, token, lookups } = await verifierWithToken(t);
  const misshapen = [
    'x'.repeat(16_000),
    token + 'A',
    token.slice(0, -1),
    `xx_${token.slice(3)}`,
    `${token.slice(0, 10)}.${token.slice(11)}`,
    'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln',
    'ps_',
  ];
  for (const presented of misshapen) {
    for (let again = 0; again < 3; again++) assert.deepEqual(await verifier.verify(presented), { valid: false, reason: 'unknown' }, presented.slice(0, 60));
  }
  assert.equal(token.length, TOKEN_LENGTH);
  assert.deepEqual(lookups, { found: 0, unknown: 0, refresh: 0 });
});
