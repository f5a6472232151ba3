import { connect, type Socket } from 'node:net';
import { within } from './until.js';

/** How long a test waits for a connection to close: past every timeout the tests set. */
const CLOSE_TIMEOUT_MS = 15_000;

export interface RawConnection {
  socket: Socket;
  /** Everything the server answered so far, as text. */
  received(): string;
  /** Resolves once the connection is closed, by either side; rejects when it stays open 15 s. */
  readonly closed: Promise<void>;
}

/**
 * A plain TCP connection to an HTTP server, for what `fetch` cannot send
 * (malformed, partial or slow requests); it collects the answer until close.
 * A socket error fails the test unless `ignoreErrors` is set. `localAddress`
 * is the client's own address (127.0.0.2 is another client on loopback);
 * with `allowHalfOpen` the client never closes its side when the server does.
 */
export function rawConnection(
  port: number,
  host = '127.0.0.1',
  { ignoreErrors = false, localAddress, allowHalfOpen = false }: { ignoreErrors?: boolean; localAddress?: string; allowHalfOpen?: boolean } = {},
): RawConnection {
  const socket = connect({ port, host, allowHalfOpen, ...(localAddress === undefined ? {} : { localAddress }) });
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  if (ignoreErrors) socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  return {
    socket,
    received: () => received,
    // Bounded only when awaited, so that a connection a test keeps open sets off no timer.
    get closed() {
      return within('the connection closes', closed, CLOSE_TIMEOUT_MS);
    },
  };
}

/** Whether a connection to `port` is refused now (ECONNREFUSED): nothing listens there any more. */
export function connectionRefused(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const attempt = connect(port, host);
    attempt.once('connect', () => (attempt.destroy(), resolve(false)));
    attempt.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

/** Sends `request` as it is and resolves everything the server answers before it closes the connection. */
export async function rawExchange(port: number, request: string, host = '127.0.0.1'): Promise<string> {
  const connection = rawConnection(port, host);
  connection.socket.write(request);
  await connection.closed;
  return connection.received();
}
