import type { Socket } from 'node:net';
import { ServiceError } from '../../errors.js';
import { rawAnswerHead } from '../answer-headers.js';
import { errorJson } from '../error-answer.js';
import { limitKey } from '../limit-key.js';

/** Long enough for the client's request to arrive, so closing sends no reset that loses the answer; not extended by what it sends. */
export const REFUSED_LINGER_MS = 1000;

const REFUSAL = (() => {
  const error = new ServiceError('TOO_MANY_CONNECTIONS');
  const body = errorJson(error);
  return rawAnswerHead(error.status, 'Too Many Requests', Buffer.byteLength(body), error.headers) + body;
})();

/** Counts the TCP peer, as no X-Forwarded-For is known at accept; TRUST_PROXY's proxies carry many clients and are exempt. */
export class ConnectionsPerAddress {
  readonly #limit: number;
  readonly #exempt: (address: string) => boolean;
  readonly #onRefuse: (address: string, key: string) => void;
  /** A key leaves with its last connection: no more keys than open connections. */
  readonly #open = new Map<string, number>();

  constructor(options: { limit: number; exempt: (address: string) => boolean; onRefuse: (address: string, key: string) => void }) {
    this.#limit = options.limit;
    this.#exempt = options.exempt;
    this.#onRefuse = options.onRefuse;
  }

  /** A refused connection is answered 429 and closed here, never counted. */
  admit(socket: Socket): boolean {
    const address = socket.remoteAddress;
    // No address: the peer is already gone, and node:http closes what is left.
    if (address === undefined || this.#exempt(address)) return true;
    const key = limitKey(address);
    const open = this.#open.get(key) ?? 0;
    if (open >= this.#limit) {
      refuse(socket);
      this.#onRefuse(address, key);
      return false;
    }
    this.#open.set(key, open + 1);
    socket.once('close', () => this.#release(key));
    return true;
  }

  #release(key: string): void {
    const open = this.#open.get(key)! - 1;
    if (open === 0) this.#open.delete(key);
    else this.#open.set(key, open);
  }
}

/** What the client sends is read and dropped: closing with unread bytes sends a reset, which may destroy the answer. */
function refuse(socket: Socket): void {
  // A client that resets a refused connection is no fault to report.
  socket.on('error', () => undefined);
  const linger = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
  socket.once('close', () => clearTimeout(linger));
  socket.resume();
  socket.end(REFUSAL);
}
