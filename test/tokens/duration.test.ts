import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDuration } from '../../src/tokens/duration.js';

test('durations are a whole number and a unit', () => {
  assert.equal(parseDuration('90s'), 90_000);
  assert.equal(parseDuration('15m'), 900_000);
  assert.equal(parseDuration('12h'), 43_200_000);
  assert.equal(parseDuration('30d'), 2_592_000_000);
  assert.equal(parseDuration('2w'), 1_209_600_000);
  assert.equal(parseDuration(' 15m\n'), 900_000, 'space around it, as a shell or a file may leave, is not part of it');
  for (const bad of ['', '10', 'd', '1.5h', '-1d', '0s', '1y', '1 d', '10000000000s', '10mx', '10m10s', 'x10m']) {
    assert.equal(parseDuration(bad), undefined, bad);
  }
});
