import { Socket } from 'node:net';
import type pg from 'pg';

/**
 * Finds a server that stopped answering without closing (its socket stays open): when statements are in flight
 * and none has come back for `timeoutMs`, every connection is cut, so they fail (503) rather than hang.
 * Counting checkouts is cheaper than node-postgres' `query_timeout`, whose per-statement timer keeps the
 * statement and its values alive until the answer.
 */
export class StallWatch {
  readonly #timeoutMs: number;
  readonly #onStall: () => void;
  readonly #sockets = new Set<Socket>();
  readonly #timer: NodeJS.Timeout;
  #checkedOut = 0;
  #returned = 0;
  #returnedBefore = 0;
  #lastProgress = Date.now();

  constructor(timeoutMs: number, onStall: () => void) {
    this.#timeoutMs = timeoutMs;
    this.#onStall = onStall;
    this.#timer = setInterval(() => this.#look(), Math.max(50, Math.floor(timeoutMs / 4)));
    this.#timer.unref();
  }

  /** The pool's `stream` option: each connection's socket, followed until it closes. */
  readonly socket = (): Socket => {
    const socket = new Socket();
    this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(socket));
    return socket;
  };

  /** Counts the checkouts and returns of `pool`, made with `socket` as its `stream`. */
  watch(pool: pg.Pool): void {
    pool.on('acquire', () => this.#checkedOut++);
    pool.on('release', () => this.#returned++);
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  #look(): void {
    const now = Date.now();
    if (this.#checkedOut === this.#returned || this.#returned !== this.#returnedBefore) {
      this.#returnedBefore = this.#returned;
      this.#lastProgress = now;
      return;
    }
    if (now - this.#lastProgress < this.#timeoutMs) return;
    this.#lastProgress = now;
    for (const socket of this.#sockets) socket.destroy();
    this.#onStall();
  }
}
