import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CALM_WINDOWS, CATCH_UP_MS, DeliveryPace, MOST_CATCH_UP_WAIT_MS, RAMP_WINDOWS } from '../../src/webhooks/delivery-pace.js';

/** A window every 100 ms, as the dispatcher takes them. */
const WINDOW_MS = 100;

/** Feeds `pace` windows from `from` (ms) for `forMs`, each with `window`; returns the last decision and the time after. */
function run(pace: DeliveryPace, from: number, forMs: number, window: { loop: number; createsPerSecond: number; creating?: boolean }) {
  let held = pace.held;
  let now = from;
  for (; now < from + forMs; now += WINDOW_MS) held = pace.update(now, { creating: true, ...window });
  return { held, now };
}

/** When, from `from`, deliveries are first let go (a catch-up begins) under `window`; undefined if not within `withinMs`. */
function letGoAt(pace: DeliveryPace, from: number, withinMs: number, window: { loop: number; createsPerSecond: number }): number | undefined {
  for (let now = from; now < from + withinMs; now += WINDOW_MS) if (!pace.update(now, { creating: true, ...window })) return now;
  return undefined;
}

/**
 * PostgreSQL saturated (the loop looks free with deliveries held back) and `times` catch-ups that
 * each slowed creates down; returns the time after the last.
 */
function displacingCatchUps(pace: DeliveryPace, times: number): number {
  let now = run(pace, 0, 300, { loop: 0.95, createsPerSecond: 24_000 }).now;
  for (let attempt = 0; attempt < times; attempt++) {
    const at = letGoAt(pace, now, 60_000, { loop: 0.75, createsPerSecond: 24_000 })!;
    pace.update(at + WINDOW_MS, { loop: 0.9, creating: true, createsPerSecond: 10_000 });
    now = at + 2 * WINDOW_MS;
  }
  return now;
}

test('deliveries are held back while creates keep the loop busy, and not when nothing is created', () => {
  const pace = new DeliveryPace();
  assert.equal(run(pace, 0, 500, { loop: 0.5, createsPerSecond: 5000 }).held, false);
  assert.equal(run(pace, 500, 500, { loop: 0.95, createsPerSecond: 30_000 }).held, true);
  const idle = new DeliveryPace();
  assert.equal(run(idle, 0, 500, { loop: 0.95, createsPerSecond: 0, creating: false }).held, false, 'a busy loop without creates is the deliveries’ own');
});

test('let go, deliveries catch up at full pace for a second even though their catch-up fills the loop', () => {
  const pace = new DeliveryPace();
  let { now } = run(pace, 0, 500, { loop: 0.95, createsPerSecond: 5000 });
  assert.equal(pace.held, true);
  ({ now } = run(pace, now, CALM_WINDOWS * WINDOW_MS, { loop: 0.6, createsPerSecond: 5000 }));
  assert.equal(pace.held, false, 'let go once the loop has room');
  // The catch-up's own work keeps the loop busy; the creates lose 15 % of their pace, too little to cut it short.
  const during = run(pace, now, CATCH_UP_MS - WINDOW_MS, { loop: 0.99, createsPerSecond: 4250 });
  assert.equal(during.held, false, 'still catching up');
  assert.equal(pace.update(during.now, { loop: 0.99, creating: true, createsPerSecond: 4250 }), true, 'after the catch-up a busy loop holds deliveries back again');
  const next = letGoAt(pace, during.now + WINDOW_MS, 60_000, { loop: 0.6, createsPerSecond: 5000 })!;
  assert.equal(next - during.now, CALM_WINDOWS * WINDOW_MS, 'and the next catch-up waits for no more than the calm windows');
});

test(`held back, deliveries are let go only after ${CALM_WINDOWS} windows in a row with room in the loop`, () => {
  const pace = new DeliveryPace();
  let { now } = run(pace, 0, 300, { loop: 0.95, createsPerSecond: 24_000 });
  // PostgreSQL saturated: the loop waits for the database now and then, one window in a few.
  for (let dip = 0; dip < 20; dip++) {
    for (let calm = 1; calm < CALM_WINDOWS; calm++, now += WINDOW_MS) {
      assert.equal(pace.update(now, { loop: 0.75, creating: true, createsPerSecond: 24_000 }), true, `still held after ${calm} calm windows`);
    }
    assert.equal(pace.update(now, { loop: 0.9, creating: true, createsPerSecond: 24_000 }), true);
    now += WINDOW_MS;
  }
  const calm = run(pace, now, CALM_WINDOWS * WINDOW_MS, { loop: 0.75, createsPerSecond: 24_000 });
  assert.equal(calm.held, false, `let go after ${CALM_WINDOWS} calm windows in a row`);
});

test('a catch-up that slows creates down ends at once, and each one after waits twice as long, up to a limit', () => {
  const pace = new DeliveryPace();
  // PostgreSQL saturated: the loop waits for the database, so it looks free with deliveries held back.
  let now = run(pace, 0, 300, { loop: 0.95, createsPerSecond: 24_000 }).now;
  const waits: number[] = [];
  for (let attempt = 0; attempt < 8; attempt++) {
    const at = letGoAt(pace, now, 60_000, { loop: 0.75, createsPerSecond: 24_000 });
    assert.ok(at !== undefined, 'deliveries are let go again, later');
    waits.push(at - now);
    // At full pace the deliveries take the creates' room.
    assert.equal(pace.update(at + WINDOW_MS, { loop: 0.9, creating: true, createsPerSecond: 10_000 }), true, 'held back as soon as creates slow down');
    now = at + 2 * WINDOW_MS;
  }
  assert.ok(waits[1]! >= CATCH_UP_MS - WINDOW_MS && waits[1]! <= CATCH_UP_MS + WINDOW_MS, `first wait ${waits[1]} ms`);
  for (let i = 2; i < waits.length; i++) {
    const expected = Math.min(CATCH_UP_MS * 2 ** (i - 1), MOST_CATCH_UP_WAIT_MS);
    assert.ok(Math.abs(waits[i]! - expected) <= 2 * WINDOW_MS, `wait ${i}: ${waits[i]} ms, about ${expected}`);
  }
  assert.ok(Math.max(...waits) <= MOST_CATCH_UP_WAIT_MS + WINDOW_MS, `waits ${waits.join(', ')} ms`);
});

test('a catch-up that leaves creates their pace goes on while it does, and ends when they rise past it', () => {
  const pace = new DeliveryPace();
  let { now } = run(pace, 0, 500, { loop: 0.95, createsPerSecond: 6500 });
  // Creates at a fifth of that; the deliveries held back leave the loop room.
  const at = letGoAt(pace, now, 60_000, { loop: 0.7, createsPerSecond: 1300 })!;
  // Ten seconds of catching up that fill the loop, the creates at their pace, give or take a window's noise.
  for (now = at + WINDOW_MS; now < at + 10 * CATCH_UP_MS; now += WINDOW_MS) {
    const createsPerSecond = (now / WINDOW_MS) % 2 === 0 ? 1200 : 1400;
    assert.equal(pace.update(now, { loop: 0.99, creating: true, createsPerSecond }), false, `still catching up after ${now - at} ms`);
  }
  // Creates rise by a quarter: the catch-up ends with the second it is in, and the busy loop holds deliveries back.
  const risen = run(pace, now, CATCH_UP_MS + WINDOW_MS, { loop: 0.99, createsPerSecond: 1625 });
  assert.equal(risen.held, true, 'held back once creates rose');
});

test('a catch-up that slows creates down without displacing them resets the wait', () => {
  const pace = new DeliveryPace();
  const now = displacingCatchUps(pace, 4);
  // Creates now leave room: a whole catch-up that takes 15 % of their pace, not enough to cut it short.
  const at = letGoAt(pace, now, 60_000, { loop: 0.75, createsPerSecond: 4000 })!;
  const caughtUp = run(pace, at + WINDOW_MS, CATCH_UP_MS, { loop: 0.99, createsPerSecond: 3400 });
  assert.equal(caughtUp.held, true, 'held again after the catch-up, the loop being busy');
  const next = letGoAt(pace, caughtUp.now, 60_000, { loop: 0.75, createsPerSecond: 4000 })!;
  assert.ok(next - caughtUp.now <= CALM_WINDOWS * WINDOW_MS, `let go again after ${next - caughtUp.now} ms`);
  // This catch-up slows creates down: the wait after it is the first one again, not the sixth.
  pace.update(next + WINDOW_MS, { loop: 0.9, creating: true, createsPerSecond: 1000 });
  const after = letGoAt(pace, next + 2 * WINDOW_MS, 60_000, { loop: 0.75, createsPerSecond: 4000 })!;
  assert.ok(after - next <= CATCH_UP_MS + 2 * WINDOW_MS, `let go again after ${after - next} ms`);
});

test('once creates stop, deliveries go at full pace at once, however long the wait they were in', () => {
  const pace = new DeliveryPace();
  const now = displacingCatchUps(pace, 6);
  assert.equal(pace.held, true, 'held back, the next catch-up many seconds away');
  assert.equal(pace.update(now, { loop: 0.99, creating: false, createsPerSecond: 0 }), false, 'let go as soon as no create comes');
  // A saturation after it is met as the first was: let go again after the first wait.
  run(pace, now + WINDOW_MS, 300, { loop: 0.95, createsPerSecond: 24_000 });
  const at = letGoAt(pace, now + 400, 60_000, { loop: 0.75, createsPerSecond: 24_000 })!;
  pace.update(at + WINDOW_MS, { loop: 0.9, creating: true, createsPerSecond: 10_000 });
  const next = letGoAt(pace, at + 2 * WINDOW_MS, 60_000, { loop: 0.75, createsPerSecond: 24_000 })!;
  assert.ok(next - at <= CATCH_UP_MS + 2 * WINDOW_MS, `let go again after ${next - at} ms`);
});

test(`a catch-up starts at twice the held-back share and doubles it each window for ${RAMP_WINDOWS} windows, then goes at full pace`, () => {
  const pace = new DeliveryPace();
  let { now } = run(pace, 0, 500, { loop: 0.95, createsPerSecond: 5000 });
  assert.equal(pace.share, 1, 'held back: the held-back share');
  now = letGoAt(pace, now, 60_000, { loop: 0.6, createsPerSecond: 5000 })!;
  const shares = [pace.share];
  for (let window = 1; window <= RAMP_WINDOWS; window++) {
    now += WINDOW_MS;
    pace.update(now, { loop: 0.99, creating: true, createsPerSecond: 4600 });
    shares.push(pace.share);
  }
  assert.deepEqual(shares, [...Array.from({ length: RAMP_WINDOWS }, (_, i) => 2 ** (i + 1)), Infinity]);
});

test('a catch-up that displaces creates while it ramps up ends at once, and the next waits twice as long', () => {
  const pace = new DeliveryPace();
  let now = run(pace, 0, 300, { loop: 0.95, createsPerSecond: 24_000 }).now;
  const tries: number[] = [];
  for (let attempt = 0; attempt < 3; attempt++) {
    const at = letGoAt(pace, now, 60_000, { loop: 0.75, createsPerSecond: 24_000 })!;
    tries.push(at);
    // Its first window reads the creates a quarter down, as one noisy window can; its second, at four times the held-back share, over 30 %.
    assert.equal(pace.update(at + WINDOW_MS, { loop: 0.9, creating: true, createsPerSecond: 18_000 }), false, 'still ramping up after a fall of a quarter');
    assert.equal(pace.share, 4);
    assert.equal(pace.update(at + 2 * WINDOW_MS, { loop: 0.9, creating: true, createsPerSecond: 16_000 }), true, 'held back once creates lose a third');
    assert.equal(pace.share, 1);
    now = at + 3 * WINDOW_MS;
  }
  const waits = tries.slice(1).map((at, i) => at - tries[i]! - 2 * WINDOW_MS);
  assert.ok(Math.abs(waits[1]! - 2 * waits[0]!) <= 2 * WINDOW_MS, `waits ${waits.join(', ')} ms`);
});
