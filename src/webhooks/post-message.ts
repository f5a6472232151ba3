import type { Dispatcher, Pool } from 'undici';

/** Most bytes of a receiver's answer read: it is only looked at for the log. */
const ANSWER_BYTES = 4 * 1024;

export type AttemptResult = { delivered: true; status: number } | { delivered: false; error: string };

let client: typeof import('undici') | undefined;

/** Loads undici, which costs less CPU a request than node:http, with the first subscription: a store without one never holds it. */
export async function loadReceiverClient(): Promise<void> {
  client ??= await import('undici');
}

/** Keep-alive connections to one subscription's receiver, so that a hanging receiver holds only its own. Call loadReceiverClient first. */
export function receiverPool(url: URL, connections: number): Pool {
  if (client === undefined) throw new Error('loadReceiverClient() was not awaited');
  return new client.Pool(url.origin, { connections, pipelining: 1 });
}

/**
 * One POST of a message through `receiver`, a pool for the URL's origin. Only a 2xx answer delivers: a redirect is not
 * followed, as the subscription names the URL. The attempt ends by `timeoutMs`, even while it waits for a connection.
 */
export function postMessage(receiver: Dispatcher, url: URL, headers: Record<string, string>, body: string, timeoutMs: number): Promise<AttemptResult> {
  return new Promise((resolve) => {
    const attempt = new Attempt(resolve, timeoutMs);
    receiver.dispatch(
      {
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'user-agent': 'plantstore-webhooks' },
        body,
      },
      attempt,
    );
  });
}

// undici's own handler of one request: request() would wrap the same events in a promise, a header object and a body
// stream, which a delivery never reads and which cost a sizeable share of its CPU.
class Attempt implements Dispatcher.DispatchHandler {
  readonly #resolve: (result: AttemptResult) => void;
  readonly #timer: NodeJS.Timeout;
  #controller: Dispatcher.DispatchController | undefined;
  #ended = false;
  #status = 0;
  #answer: Buffer[] = [];
  #answerBytes = 0;

  constructor(resolve: (result: AttemptResult) => void, timeoutMs: number) {
    this.#resolve = resolve;
    this.#timer = setTimeout(() => this.#cut({ delivered: false, error: `no answer within ${timeoutMs} ms` }), timeoutMs);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    // The time ran out while the request waited for a connection.
    if (this.#ended) controller.abort(new Error('the attempt has ended'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number): void {
    // An interim 1xx answer is followed by the final one, which takes its place.
    this.#status = statusCode;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#answerBytes += chunk.length;
    if (!this.#delivered()) this.#answer.push(chunk);
    // A longer answer is not worth its bytes: its connection goes instead.
    if (this.#answerBytes >= ANSWER_BYTES) this.#cut(this.#result());
  }

  onResponseEnd(): void {
    this.#end(this.#result());
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    this.#end({ delivered: false, error: describe(error) });
  }

  #delivered(): boolean {
    return this.#status >= 200 && this.#status < 300;
  }

  #result(): AttemptResult {
    if (this.#delivered()) return { delivered: true, status: this.#status };
    const text = Buffer.concat(this.#answer).toString('utf8', 0, ANSWER_BYTES);
    return { delivered: false, error: `HTTP ${this.#status}${text === '' ? '' : `: ${text.slice(0, 200).replace(/\s+/g, ' ')}`}` };
  }

  /** The first outcome wins. */
  #end(result: AttemptResult): void {
    if (this.#ended) return;
    this.#ended = true;
    clearTimeout(this.#timer);
    this.#resolve(result);
  }

  #cut(result: AttemptResult): void {
    this.#end(result);
    this.#controller?.abort(new Error('the attempt has ended'));
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  return code !== undefined && !code.startsWith('UND_ERR') ? code : error.message;
}
