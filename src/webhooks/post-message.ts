import { EventEmitter } from 'node:events';
import type { Dispatcher, Pool } from 'undici';

/** Most bytes of a receiver's answer read: it is only looked at for the log. */
const ANSWER_BYTES = 4 * 1024;

export type AttemptResult = { delivered: true; status: number } | { delivered: false; error: string };

let client: typeof import('undici') | undefined;

/**
 * Loads the HTTP client of deliveries: undici, whose requests cost about
 * half the CPU of node:http's. It is loaded with the first subscription
 * (it holds some 20 MiB), so a store without subscriptions never pays for it.
 */
export async function loadReceiverClient(): Promise<void> {
  client ??= await import('undici');
}

/**
 * Keep-alive connections to one subscription's receiver, at most
 * `connections` of them. Each subscription has its own, so a receiver that
 * hangs holds only its own connections. Call `loadReceiverClient` first.
 */
export function receiverPool(url: URL, connections: number): Pool {
  if (client === undefined) throw new Error('loadReceiverClient() was not awaited');
  return new client.Pool(url.origin, { connections, pipelining: 1 });
}

/**
 * One POST of a message through `receiver` (a pool for the URL's origin). A
 * 2xx answer delivers; any other status, a redirect included (not followed:
 * the subscription names the URL to send to), a connection error or no full
 * answer within `timeoutMs` does not. At most a few KiB of the answer are
 * read.
 */
export async function postMessage(receiver: Dispatcher, url: URL, headers: Record<string, string>, body: string, timeoutMs: number): Promise<AttemptResult> {
  // undici takes an EventEmitter as the abort signal: far cheaper than an AbortController an attempt.
  const cutoff = new EventEmitter();
  let cut = false;
  const timer = setTimeout(() => {
    cut = true;
    cutoff.emit('abort');
  }, timeoutMs);
  try {
    const answer = await receiver.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', 'user-agent': 'plantstore-webhooks' },
      body,
      signal: cutoff,
    });
    const status = answer.statusCode;
    if (status >= 200 && status < 300) {
      await answer.body.dump({ limit: ANSWER_BYTES });
      return { delivered: true, status };
    }
    const text = await answerStart(answer.body);
    return { delivered: false, error: `HTTP ${status}${text === '' ? '' : `: ${text.slice(0, 200).replace(/\s+/g, ' ')}`}` };
  } catch (error) {
    if (cut) return { delivered: false, error: `no answer within ${timeoutMs} ms` };
    return { delivered: false, error: describe(error) };
  } finally {
    clearTimeout(timer);
  }
}

/** The first ANSWER_BYTES of an answer, as text; a longer answer is not worth its bytes: its connection goes instead. */
async function answerStart(body: Dispatcher.ResponseData['body']): Promise<string> {
  let answer = '';
  body.setEncoding('utf8');
  for await (const chunk of body as AsyncIterable<string>) {
    answer += chunk;
    if (answer.length >= ANSWER_BYTES) {
      body.destroy();
      break;
    }
  }
  return answer.slice(0, ANSWER_BYTES);
}

/** A system error's code (`ECONNREFUSED`), or undici's own words for its errors (`other side closed`). */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  return code !== undefined && !code.startsWith('UND_ERR') ? code : error.message;
}
