import { type ChildProcess, fork } from 'node:child_process';
import { getPriority, setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { FastifyBaseLogger } from 'fastify';
import { DELIVER_SETTINGS, flagOf, settings } from '../config/config.js';
import { type AttemptsReport, coalesced, isAttemptsReport, isDelivering, MESSAGES_WRITTEN } from '../webhooks/delivery-channel.js';

const BIN = fileURLToPath(new URL('../../bin/plantstore', import.meta.url));

/**
 * Added to serve's niceness: when creates saturate the cores, the kernel gives them their share before deliveries
 * (bench/results/2026-12-08-deliverer-priority.md).
 */
export const DELIVERER_NICENESS = 13;
/** The most niceness Linux knows. */
const LOWEST_PRIORITY = 19;
/** Serve tells its deliverer of new messages at most this often: a word at each commit cost saturated creates a tenth. */
export const NUDGE_GAP_MS = 100;
/** A deliverer that died is started again after this long, doubled while it keeps dying young, up to MOST_RESTART_DELAY_MS. */
const RESTART_DELAY_MS = 1000;
const MOST_RESTART_DELAY_MS = 30_000;
/** A deliverer that ran this long before dying died of something else than its start: the next one starts after RESTART_DELAY_MS. */
const YOUNG_MS = 10_000;
/** A stopping deliverer gets its grace and this much more to record its outcomes before it is killed. */
const STOP_MARGIN_MS = 5000;

/**
 * The `plantstore deliver` process a server starts beside itself (WEBHOOK_DELIVERY=on), at a lower priority: told of the
 * messages the server commits, it tells back the outcomes of its attempts. One that dies is started again.
 */
export class DelivererProcess {
  readonly #env: Record<string, string | undefined>;
  readonly #log: FastifyBaseLogger;
  readonly #onReport: (report: AttemptsReport) => void;
  #child: ChildProcess | undefined;
  #startedAt = 0;
  #restartDelayMs = RESTART_DELAY_MS;
  #restart: NodeJS.Timeout | undefined;
  #stopping = false;

  /** `env` is serve's environment with its flags as variables (delivererEnv). */
  constructor(env: Record<string, string | undefined>, log: FastifyBaseLogger, onReport: (report: AttemptsReport) => void) {
    this.#env = env;
    this.#log = log;
    this.#onReport = onReport;
  }

  /** Tells the deliverer that messages were committed, at most once every NUDGE_GAP_MS. */
  readonly messagesWritten = coalesced(() => {
    if (this.#child?.connected === true) this.#child.send(MESSAGES_WRITTEN);
  }, NUDGE_GAP_MS);

  start(): void {
    if (this.#child !== undefined || this.#stopping) return;
    // Node.js's own flags (bin/plantstore's V8 flags among them) are the server's.
    const child = fork(BIN, ['deliver'], { env: this.#env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.#child = child;
    this.#startedAt = Date.now();
    child.on('message', (message) => {
      if (isAttemptsReport(message)) this.#onReport(message);
      // Lowered once it has started: at the lower priority, beside saturated creates, its start would take seconds.
      else if (isDelivering(message)) this.#lowerPriority(child);
    });
    child.on('error', (error) => this.#log.error({ err: error }, 'the webhook deliverer could not be started or signalled'));
    child.once('exit', (code, signal) => {
      this.#child = undefined;
      if (this.#stopping) return;
      this.#restartDelayMs = Date.now() - this.#startedAt >= YOUNG_MS ? RESTART_DELAY_MS : Math.min(2 * this.#restartDelayMs, MOST_RESTART_DELAY_MS);
      this.#log.error({ delivererPid: child.pid, code, signal, restartInMs: this.#restartDelayMs }, 'the webhook deliverer exited; starting another');
      this.#restart = setTimeout(() => this.start(), this.#restartDelayMs);
    });
  }

  #lowerPriority(child: ChildProcess): void {
    try {
      setPriority(child.pid!, Math.min(LOWEST_PRIORITY, getPriority() + DELIVERER_NICENESS));
    } catch (error) {
      // Gone already (its exit is handled), or a system that refuses: it delivers at the server's priority.
      if (child.exitCode === null) this.#log.warn({ err: error }, "the webhook deliverer runs at the server's priority: its niceness could not be raised");
    }
  }

  /**
   * Stops the deliverer (it hands its held messages back and finishes its attempts within `graceMs`) and starts none
   * again; one still running STOP_MARGIN_MS after its grace is killed, so that a stuck deliverer never holds serve up.
   */
  async stop(graceMs: number): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#restart);
    const child = this.#child;
    if (child === undefined) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const killer = setTimeout(() => {
      this.#log.error({ delivererPid: child.pid, graceMs }, 'the webhook deliverer did not stop within its grace: killing it');
      child.kill('SIGKILL');
    }, graceMs + STOP_MARGIN_MS);
    await exited;
    clearTimeout(killer);
  }
}

/** serve's environment for its deliverer: its setting flags as variables, and no PORT, which is the server's. */
export function delivererEnv(env: Readonly<Record<string, string | undefined>>, flags: Readonly<Record<string, unknown>>): Record<string, string | undefined> {
  const childEnv = { ...env };
  delete childEnv[settings.port.env];
  for (const name of DELIVER_SETTINGS) {
    const flag = flags[flagOf(settings[name])];
    if (name !== 'port' && typeof flag === 'string') childEnv[settings[name].env] = flag;
  }
  return childEnv;
}
