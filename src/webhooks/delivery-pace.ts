/**
 * Above this share of the event loop in use, with creates flowing, creates
 * are taken to saturate the process: deliveries are held back.
 */
const BUSY_UTILIZATION = 0.8;
/**
 * Held-back deliveries are let go only after this many windows in a row
 * below BUSY_UTILIZATION. On PostgreSQL a saturated loop waits for the
 * database now and then, so that about a third of its windows fall below
 * the mark. Let go at each, deliveries started a catch-up every time the
 * wait allowed, each halving the creates for a window: with a
 * subscription, the creates' p99 was 2.0 times the durable floor's, and
 * 1.5 times without catch-ups (bench/results/2026-11-28-catch-ups.md).
 */
export const CALM_WINDOWS = 3;
/**
 * Once held-back deliveries find the loop below BUSY_UTILIZATION, they go at
 * full pace for at least this long, whatever the loop's use: a backlog's
 * catch-up fills the loop by itself and, read as creates' load, would hold
 * deliveries back again at once, so that the backlog never shrank (at half
 * the sustainable rate on SQLite, messages waited 2 s).
 */
export const CATCH_UP_MS = 1000;
/**
 * A catch-up during which creates fall below this share of their pace while
 * deliveries were held back is cut short: the deliveries took the creates'
 * room. On PostgreSQL the loop waits for the database and so looks free
 * while creates saturate the machine; their rate is what shows it.
 */
const DISPLACED_SHARE = 0.7;
/**
 * A catch-up over which creates kept this share of their pace, and rose no
 * more than its inverse, goes on for another CATCH_UP_MS: the loop it fills
 * is the deliveries' own use of room the creates did not need. Ended after
 * each CATCH_UP_MS instead, a catch-up left deliveries held back until
 * CALM_WINDOWS windows came again, which beside creates at a fifth of the
 * saturated rate on a slow host took seconds at a time: the backlog that
 * saturation left waited 24 s. Under saturation a catch-up costs creates
 * more than this, so it still ends.
 */
const KEPT_SHARE = 0.9;
/**
 * A catch-up does not start at full pace: its first window takes twice the
 * held-back share, and each window after doubles it, for this many windows;
 * then full pace. A window that displaces creates (DISPLACED_SHARE) ends it,
 * as at full pace. At full pace from its first window, a try beside
 * saturated creates on PostgreSQL halved them for that window, and a 10 s
 * measurement saw up to four such tries: without them, the creates' p99 was
 * 1.31 instead of 1.45 times the durable floor's
 * (bench/results/2026-12-02-held-share.md). Ended at a fall of a fifth
 * instead, as first built, one run beside creates at a fifth of the
 * saturated rate on SQLite left the backlog 11.5 s old after 60 s: a
 * window's noise there is as large. Held back, a subscription sends 80 a
 * second; 2^6 times that is past what a process delivers at full pace.
 */
export const RAMP_WINDOWS = 6;
/** The longest wait before trying a catch-up again after catch-ups kept displacing creates; the wait doubles from CATCH_UP_MS. */
export const MOST_CATCH_UP_WAIT_MS = 30_000;

/** What the dispatcher measured over one window. */
export interface LoadWindow {
  /** The event loop's utilization over the window, 0 to 1. */
  loop: number;
  /** Plants committed a second over the window. */
  createsPerSecond: number;
  /** Whether creates are flowing at all. */
  creating: boolean;
}

/**
 * Decides, window by window, whether deliveries are held back so that creates
 * keep the process: held while creates keep the loop busy; let go when they
 * have not for CALM_WINDOWS windows in a row, for a catch-up of at least
 * CATCH_UP_MS that ramps up (RAMP_WINDOWS), ends early if it slows the
 * creates down, and goes on while it leaves them their pace (KEPT_SHARE). After each
 * catch-up that did, the next one waits twice as long as the last, up to
 * MOST_CATCH_UP_WAIT_MS; a catch-up that did not resets the wait.
 */
export class DeliveryPace {
  #held = false;
  /** The catch-up's window, from 1, while it ramps up (RAMP_WINDOWS); 0 otherwise. */
  #rampWindow = 0;
  /** The catch-up under way: until when, the creates' pace before it, and the creates a second of its windows so far. */
  #catchUp: { until: number; createsPerSecond: number; ratesSum: number; windows: number } | undefined;
  #nextCatchUpAt = 0;
  #catchUpWaitMs = CATCH_UP_MS;
  /** Windows in a row below BUSY_UTILIZATION. */
  #calmWindows = 0;
  /** The creates a second of the last CALM_WINDOWS of them. */
  #calmRates: number[] = [];

  get held(): boolean {
    return this.#held;
  }

  /**
   * How many times the held-back share deliveries may take now: 1 while held
   * back, 2, 4, ... in a catch-up's first windows, Infinity at full pace.
   */
  get share(): number {
    if (this.#held) return 1;
    return this.#rampWindow === 0 ? Infinity : 2 ** this.#rampWindow;
  }

  /** Whether deliveries go at a share of their pace (held back, or a catch-up ramping up) rather than at full pace. */
  get paced(): boolean {
    return this.share !== Infinity;
  }

  /** Takes one window's figures (at `now`, ms) and says whether deliveries are held back from now on. */
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
