import type { Socket } from 'node:net';
import { ServiceError } from '../../errors.js';
import { rawAnswerHead } from '../answer-headers.js';
import { errorJson } from '../error-answer.js';
import { limitKey } from '../limit-key.js';

/**
 * The most connections a refused one is kept open for: long enough for the
 * client's request to arrive and be read, so that closing does not reset the
 * connection and lose the answer; short, and not extended by anything the
 * client sends, so that refused connections cannot be held either.
 */
export const REFUSED_LINGER_MS = 1000;

/** The whole answer to a connection refused: the contract's Error, then the connection closes. */
const REFUSAL = (() => {
  const error = new ServiceError('TOO_MANY_CONNECTIONS');
  const body = errorJson(error);
  return rawAnswerHead(error.status, 'Too Many Requests', Buffer.byteLength(body), error.headers) + body;
})();

/**
 * MAX_CONNECTIONS_PER_ADDRESS: the connections open from each client
 * address (its limit key: an IPv6 client by its /64), counted from accept
 * to close whatever closes them, so that one address cannot take every
 * connection MAX_CONNECTIONS allows. The count is the TCP peer's, since no
 * X-Forwarded-For is known when a connection opens; peers that are exempt
 * (the proxies of TRUST_PROXY, each carrying many clients) are not counted.
 */
export class ConnectionsPerAddress {
  readonly #limit: number;
  readonly #exempt: (address: string) => boolean;
  readonly #onRefuse: (address: string, key: string) => void;
  /** Open connections by limit key; a key leaves with its last connection, so this holds no more keys than connections are open. */
  readonly #open = new Map<string, number>();

  constructor(options: { limit: number; exempt: (address: string) => boolean; onRefuse: (address: string, key: string) => void }) {
    this.#limit = options.limit;
    this.#exempt = options.exempt;
    this.#onRefuse = options.onRefuse;
  }

  /**
   * Whether a new connection may be served. If so it is counted until it
   * closes; if not, it is answered 429 and closed here, and never counted.
   */
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

/**
 * Answers 429 before any request is read, then closes. What the client sends
 * meanwhile is read and dropped: closing with unread bytes would send a
 * reset, which may destroy the answer before the client reads it.
 */
function refuse(socket: Socket): void {
  // A client that resets a refused connection is no fault to report.
  socket.on('error', () => undefined);
  const linger = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
  socket.once('close', () => clearTimeout(linger));
  socket.resume();
  socket.end(REFUSAL);
}
