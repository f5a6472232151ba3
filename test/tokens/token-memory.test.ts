import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ENTRY_BYTES, TokenMemory } from '../../src/tokens/token-memory.js';

const FOREVER = Number.MAX_SAFE_INTEGER;
const remembered = (memory: TokenMemory<string>, keys: readonly string[]) => keys.filter((key) => memory.get(key, 0) !== undefined);

test('a full memory forgets its oldest entry to make room, one at a time, never all at once', () => {
  const memory = new TokenMemory<string>({ maxEntries: 3, maxBytes: FOREVER });
  for (const key of ['a', 'b', 'c', 'd']) memory.set(key, key, FOREVER);
  assert.deepEqual(remembered(memory, ['a', 'b', 'c', 'd']), ['b', 'c', 'd']);
  // b, c and d were read just now: each is spared once, then the oldest of them goes.
  memory.set('e', 'e', FOREVER);
  assert.deepEqual(remembered(memory, ['b', 'c', 'd', 'e']), ['c', 'd', 'e']);
});

test("the memory holds at most its bytes: the keys' characters and ENTRY_BYTES an entry", () => {
  const key = (n: number) => `${n}`.padStart(1000, 'k');
  const memory = new TokenMemory<string>({ maxEntries: 1000, maxBytes: 3 * (1000 + ENTRY_BYTES) });
  for (let n = 0; n < 4; n++) memory.set(key(n), 'v', FOREVER);
  assert.deepEqual(remembered(memory, [0, 1, 2, 3].map(key)), [1, 2, 3].map(key), 'three of 1,000 characters fit, not four');

  memory.set('x'.repeat(2000), 'v', FOREVER);
  assert.deepEqual(remembered(memory, [key(3), 'x'.repeat(2000)]), [key(3), 'x'.repeat(2000)], 'one of 2,000 characters takes the room of the two oldest');
  memory.set('y'.repeat(3 * (1000 + ENTRY_BYTES)), 'v', FOREVER);
  assert.equal(memory.get('y'.repeat(3 * (1000 + ENTRY_BYTES)), 0), undefined, 'a key larger than the whole memory is not remembered...');
  assert.deepEqual(remembered(memory, [key(3), 'x'.repeat(2000)]), [key(3), 'x'.repeat(2000)], '...and makes nothing be forgotten');
});

test('an entry read between new ones outlives any number of them; entries never read go in the order they came', () => {
  const memory = new TokenMemory<string>({ maxEntries: 100, maxBytes: FOREVER });
  memory.set('in use', 'valid', FOREVER);
  for (let n = 0; n < 10_000; n++) {
    memory.set(`stranger ${n}`, 'unknown', FOREVER);
    if (n % 50 === 0) assert.equal(memory.get('in use', 0), 'valid', `after ${n + 1} others`);
  }
  const strangers = Array.from({ length: 10_000 }, (_, n) => `stranger ${n}`);
  assert.deepEqual(remembered(memory, strangers), strangers.slice(-99), 'the newest 99 beside it');
});

test('an entry is remembered until its time, and set again it is remembered as the newest', () => {
  const memory = new TokenMemory<string>({ maxEntries: 2, maxBytes: FOREVER });
  memory.set('a', 'first', 100);
  assert.equal(memory.get('a', 99), 'first');
  assert.equal(memory.get('a', 100), undefined);
  memory.set('b', 'b', FOREVER);
  memory.set('a', 'second', FOREVER);
  memory.set('c', 'c', FOREVER);
  assert.deepEqual(remembered(memory, ['a', 'b', 'c']), ['a', 'c'], 'b, not a, was the oldest');
  memory.delete('a');
  assert.equal(memory.get('a', 0), undefined);
});
