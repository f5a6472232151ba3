import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Time for the rest of a body in flight to arrive and for the client to read the early answer and close. */
export const LINGER_MS = 2000;

const closing = new WeakSet<Socket>();

/**
 * Sends a refusal that may precede the body as the request's only answer: a body still on its way would meet the
 * request timeout's 408 as a second answer, so its connection closes after this one. The rest of a body that arrives
 * with the headers is parsed after them, hence the second look in the next turn.
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

/** No request after the one answered with `close` is processed (RFC 9112, section 9.6). */
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

/** Closes in stages (RFC 9112, section 9.6): closed at once, a connection still receiving sends a reset that can lose the answer. */
function lingeringClose(socket: Socket): void {
  socket.end();
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}
