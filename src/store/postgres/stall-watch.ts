import { Socket } from 'node:net';
import type pg from 'pg';

/**
 * Finds a server that stopped answering without closing (a frozen host, a
 * partition): nothing else would, as its socket stays open and its kernel may
 * even acknowledge what is sent. When statements are in flight on `pool` and
 * none has come back for `timeoutMs`, every connection of the pool is cut, so
 * that the statements waiting on them fail (and are answered 503) instead of
 * hanging, and `onStall` is told.
 *
 * It counts the pool's checkouts and returns, and looks at the counts a few
 * times per timeout. node-postgres' own `query_timeout` arms a timer per
 * statement whose closure holds the statement and its values, which then
 * live until the answer: under load that measured about 8 MiB more peak
 * memory. Counting costs a statement two additions.
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
