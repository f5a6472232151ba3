import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * How long a connection that closes after an early answer goes on reading
 * what its client still sends, at most, in milliseconds: time for the rest of
 * a body in flight to arrive and for the client to read the answer and close.
 */
export const LINGER_MS = 2000;

/** Connections that close once their early answer is written: nothing more they send is served. */
const closing = new WeakSet<Socket>();

/**
 * Sends an answer that may come before its request's body has arrived (a
 * refusal of its headers: 401, 403, 413, 415, 429, 503), so that the request
 * gets this one answer and no other.
 *
 * A body that has arrived whole is left for node:http to discard, and the
 * connection stays open. A body still on its way would hold the connection
 * until the request timeout, whose 408 would be a second answer to the same
 * request; so the answer says `Connection: close`, and the connection ends
 * once it is written. The rest of a body that arrives with the headers is
 * parsed after them, so the body is looked at once more in the next turn of
 * the event loop before deciding.
 */
export function answerBeforeBody(request: IncomingMessage, response: ServerResponse, send: () => void): void {
  if (!bodyPending(request)) {
    send();
    return;
  }
  setImmediate(() => {
    if (bodyPending(request)) closeAfterAnswer(response);
    send();
  });
}

/**
 * Whether the connection closes after an early answer: a request that
 * arrives on it after the refused one is not served (RFC 9112, section 9.6:
 * no request after the one answered with `close` is processed).
 */
export function closesAfterAnswer(socket: Socket): boolean {
  return closing.has(socket);
}

/** node:http sets `complete` once the whole request is parsed; an injected request has no connection, and no such flag. */
function bodyPending(request: IncomingMessage): boolean {
  return request.complete === false;
}

function closeAfterAnswer(response: ServerResponse): void {
  const socket = response.socket;
  if (socket === null || socket.destroyed) return;
  response.setHeader('connection', 'close');
  closing.add(socket);
  // node:http ends a connection after an answer that says close with socket.destroySoon(): this one lingers instead.
  socket.destroySoon = () => lingeringClose(socket);
}

/**
 * Closes in stages, as RFC 9112 (section 9.6) advises: the write side first,
 * after the answer; then the connection goes on reading, and node:http
 * discarding, what the client still sends, until the client closes its side
 * or LINGER_MS pass. Closed at once, a connection that still receives sends a
 * reset, which can make the client lose the answer before reading it.
 */
function lingeringClose(socket: Socket): void {
  socket.end();
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}
