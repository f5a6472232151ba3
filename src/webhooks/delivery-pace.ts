/** Above this share of the event loop in use, with creates flowing, creates saturate the process: deliveries are held back. */
const BUSY_UTILIZATION = 0.8;
/**
 * Held-back deliveries are let go only after this many windows in a row below BUSY_UTILIZATION: on PostgreSQL a
 * saturated loop waits for the database now and then, and a catch-up at each such window slows the creates down.
 */
export const CALM_WINDOWS = 3;
/**
 * Once let go, deliveries go at full pace for at least this long whatever the loop's use: a catch-up fills the loop by
 * itself and, read as the creates' load, would hold deliveries back again before the backlog shrinks.
 */
export const CATCH_UP_MS = 1000;
// Creates below this share of their held-back pace cut a catch-up short: on PostgreSQL the loop looks free while they saturate the machine.
const DISPLACED_SHARE = 0.7;
// A catch-up over which creates kept this share of their pace, and rose no more than its inverse, goes on for another
// CATCH_UP_MS: ending it would hold deliveries back until CALM_WINDOWS come again, for room the creates do not need.
// Under saturation a catch-up costs creates more than this, so it still ends.
const KEPT_SHARE = 0.9;
/**
 * A catch-up starts at twice the held-back share and doubles it each window for this many windows before full pace: a
 * full-pace start displaces saturated creates. 2^6 times the held-back share is past what a process delivers at full pace.
 */
export const RAMP_WINDOWS = 6;
/** The longest wait before trying a catch-up again after catch-ups kept displacing creates; the wait doubles from CATCH_UP_MS. */
export const MOST_CATCH_UP_WAIT_MS = 30_000;

export interface LoadWindow {
  loop: number;
  createsPerSecond: number;
  creating: boolean;
}

/** Decides, window by window, whether deliveries are held back so that creates keep the process, and paces the catch-ups after. */
export class DeliveryPace {
  #held = false;
  /** The catch-up's window, from 1, while it ramps up (RAMP_WINDOWS); 0 otherwise. */
  #rampWindow = 0;
  /** The catch-up under way: until when, the creates' pace before it, and the creates a second of its windows so far. */
  #catchUp: { until: number; createsPerSecond: number; ratesSum: number; windows: number } | undefined;
  #nextCatchUpAt = 0;
  #catchUpWaitMs = CATCH_UP_MS;
  #calmWindows = 0;
  #calmRates: number[] = [];

  get held(): boolean {
    return this.#held;
  }

  /** Multiple of the held-back share deliveries may take: 1 held back, 2, 4, ... while a catch-up ramps up, Infinity at full pace. */
  get share(): number {
    if (this.#held) return 1;
    return this.#rampWindow === 0 ? Infinity : 2 ** this.#rampWindow;
  }

  get paced(): boolean {
    return this.share !== Infinity;
  }

  /** Takes one window's figures (at `now`, ms) and says whether deliveries are held back from then on. */
  update(now: number, window: LoadWindow): boolean {
    if (!window.creating) {
      // Nothing to make room for: full pace at once, and a later saturation starts afresh.
      this.#held = false;
      this.#rampWindow = 0;
      this.#catchUp = undefined;
      this.#nextCatchUpAt = 0;
      this.#catchUpWaitMs = CATCH_UP_MS;
      return false;
    }
    if (this.#catchUp !== undefined) {
      if (window.createsPerSecond < DISPLACED_SHARE * this.#catchUp.createsPerSecond) {
        this.#catchUp = undefined;
        this.#held = true;
        this.#rampWindow = 0;
        this.#nextCatchUpAt = now + this.#catchUpWaitMs;
        this.#catchUpWaitMs = Math.min(2 * this.#catchUpWaitMs, MOST_CATCH_UP_WAIT_MS);
        return true;
      }
      if (this.#rampWindow > 0) this.#rampWindow = this.#rampWindow < RAMP_WINDOWS ? this.#rampWindow + 1 : 0;
      this.#catchUp.ratesSum += window.createsPerSecond;
      this.#catchUp.windows += 1;
      if (now < this.#catchUp.until) return false;
      const kept = this.#catchUp.ratesSum / this.#catchUp.windows / this.#catchUp.createsPerSecond;
      this.#catchUpWaitMs = CATCH_UP_MS;
      if (kept >= KEPT_SHARE && kept <= 1 / KEPT_SHARE) {
        this.#catchUp = { ...this.#catchUp, until: now + CATCH_UP_MS, ratesSum: 0, windows: 0 };
        return false;
      }
      this.#catchUp = undefined;
    }
    const saturated = window.loop > BUSY_UTILIZATION;
    this.#calmWindows = saturated ? 0 : this.#calmWindows + 1;
    if (saturated) this.#calmRates = [];
    else if (this.#calmRates.push(window.createsPerSecond) > CALM_WINDOWS) this.#calmRates.shift();
    if (!this.#held) {
      this.#held = saturated;
    } else if (this.#calmWindows >= CALM_WINDOWS && now >= this.#nextCatchUpAt) {
      // The pace creates keep with deliveries held back (over the calm windows, as one window's is noisy), which the catch-up must not slow down.
      this.#held = false;
      this.#rampWindow = 1;
      const createsPerSecond = this.#calmRates.reduce((sum, rate) => sum + rate, 0) / this.#calmRates.length;
      this.#catchUp = { until: now + CATCH_UP_MS, createsPerSecond, ratesSum: 0, windows: 0 };
    }
    return this.#held;
  }
}
