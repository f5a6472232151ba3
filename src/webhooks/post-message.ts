import http from 'node:http';
import https from 'node:https';

/** Most bytes of a receiver's answer read: it is only looked at for the log. */
const ANSWER_BYTES = 4 * 1024;

export type AttemptResult = { delivered: true; status: number } | { delivered: false; error: string };

/** Connections kept open between attempts: a receiver sees one connection per concurrent delivery, not one per message. */
export const agents = {
  http: new http.Agent({ keepAlive: true }),
  https: new https.Agent({ keepAlive: true }),
};

/**
 * One POST of a message. A 2xx answer delivers; any other status, a redirect
 * included (not followed: the subscription names the URL to send to), a
 * connection error or no full answer within `timeoutMs` does not. At most a
 * few KiB of the answer are read.
 */
export function postMessage(url: URL, headers: Record<string, string>, body: string, timeoutMs: number, signal: AbortSignal): Promise<AttemptResult> {
  return new Promise((resolve) => {
    const secure = url.protocol === 'https:';
    let settled = false;
    const finish = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const request = (secure ? https : http).request(url, {
      method: 'POST',
      agent: secure ? agents.https : agents.http,
      headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'user-agent': 'plantstore-webhooks' },
    });
    const timer = setTimeout(() => {
      finish({ delivered: false, error: `no answer within ${timeoutMs} ms` });
      request.destroy();
    }, timeoutMs);
    const abort = () => {
      finish({ delivered: false, error: 'interrupted: the server is stopping' });
      request.destroy();
    };
    if (signal.aborted) abort();
    signal.addEventListener('abort', abort, { once: true });
    request.on('close', () => signal.removeEventListener('abort', abort));
    request.on('error', (error: NodeJS.ErrnoException) => finish({ delivered: false, error: error.code ?? error.message }));
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      let read = 0;
      let answer = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        if (read < ANSWER_BYTES) answer += chunk.slice(0, ANSWER_BYTES - read);
        read += chunk.length;
        // A long answer is not worth its bytes: the connection goes instead.
        if (read > ANSWER_BYTES) response.destroy();
      });
      const done = () =>
        finish(
          status >= 200 && status < 300
            ? { delivered: true, status }
            : { delivered: false, error: `HTTP ${status}${answer === '' ? '' : `: ${answer.slice(0, 200).replace(/\s+/g, ' ')}`}` },
        );
      response.on('end', done);
      response.on('close', done);
      response.on('error', done);
    });
    request.end(body);
  });
}
