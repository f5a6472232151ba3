import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Histogram, Registry } from 'prom-client';
import { RequestDurations } from '../../src/observability/request-durations.js';

test("the request histogram serves, line for line, what prom-client's own Histogram serves for the same observations", async () => {
  const buckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
  const observation = fc.record({
    route: fc.constantFrom('/plants', '/metrics', 'unknown', 'a "quoted" \\ route'),
    method: fc.constantFrom('POST', 'GET'),
    status: fc.constantFrom(200, 401, 409, 503),
    seconds: fc.oneof(fc.constantFrom(...buckets, 0, 3), fc.double({ min: 0, max: 5, noNaN: true })),
  });
  await fc.assert(
    fc.asyncProperty(fc.array(observation, { maxLength: 200 }), async (observations) => {
      const theirs = new Registry();
      const ours = new Registry();
      const histogram = new Histogram({ name: 'd_seconds', help: 'durations', labelNames: ['route', 'method', 'status'], buckets, registers: [theirs] });
      const durations = new RequestDurations({ name: 'd_seconds', help: 'durations', buckets, registers: [ours] });
      for (const { route, method, status, seconds } of observations) {
        histogram.labels({ route, method, status }).observe(seconds);
        durations.series(route, method, status).observe(seconds);
      }
      assert.equal(await ours.metrics(), await theirs.metrics());
    }),
    { numRuns: 300 },
  );
});
