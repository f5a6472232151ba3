import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LogThrottle } from '../../src/observability/log-throttle.js';

test('a flood of an event makes one line per interval, each saying how many went unlogged before it', () => {
  let now = 1_000;
  const throttle = new LogThrottle(10_000, () => now);
  assert.equal(throttle.take(), 0, 'the first one is logged');
  const during = Array.from({ length: 500 }, () => throttle.take());
  assert.ok(during.every((taken) => taken === undefined), 'none more within the interval');
  now += 9_999;
  assert.equal(throttle.take(), undefined);
  now += 1;
  assert.equal(throttle.take(), 501, 'the next line counts the ones in between');
  now += 60_000;
  assert.equal(throttle.take(), 0);
});
