import assert from 'node:assert/strict';
import { test } from 'node:test';
import { randomRequestId } from '../../src/http/request-id.js';

const VERSION_4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('a new request id is a version 4 UUID, never the same twice, across many fills of random bytes', () => {
  const ids = Array.from({ length: 5000 }, randomRequestId);
  for (const id of ids) assert.match(id, VERSION_4);
  assert.equal(new Set(ids).size, ids.length);
  // Every hex digit appears in every random position: the ids carry the random bytes, not a pattern.
  for (const position of [0, 9, 15, 20, 35]) assert.equal(new Set(ids.map((id) => id[position])).size, 16, `position ${position}`);
  assert.deepEqual(new Set(ids.map((id) => id[19])), new Set(['8', '9', 'a', 'b']));
});
