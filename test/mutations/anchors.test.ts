import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { MUTATIONS } from './mutations.js';

// npm run test:mutations finds each anchor at its run; this finds a stale one at every npm test.
test("every deliberate bug's text occurs exactly once in its file", () => {
  const stale = MUTATIONS.flatMap((mutation) => {
    const count = readFileSync(new URL(`../../${mutation.file}`, import.meta.url), 'utf8').split(mutation.from).length - 1;
    return count === 1 ? [] : [`${mutation.name}: ${mutation.file} holds its text ${count} times`];
  });
  assert.deepEqual(stale, []);
});
