import assert from 'node:assert/strict';

/** One HTTP/1.1 answer as read off a raw connection. */
export interface Answer {
  status: number;
  /** Names in lower case. */
  headers: Record<string, string>;
  body: string;
}

/** The answers a connection received, in order (HTTP/1.1 answers requests in the order they came). */
export function splitAnswers(received: string): Answer[] {
  const answers: Answer[] = [];
  let rest = Buffer.from(received);
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n');
    assert.ok(end > 0, `an answer's head: ${rest.toString()}`);
    const [statusLine, ...lines] = rest.subarray(0, end).toString().split('\r\n');
    const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
    const length = Number(headers['content-length']);
    answers.push({ status: Number(statusLine!.split(' ')[1]), headers, body: rest.subarray(end + 4, end + 4 + length).toString() });
    rest = rest.subarray(end + 4 + length);
  }
  return answers;
}

/** A POST /plants request as it goes on the wire, with a Content-Length that says `declaredLength` (the body's own by default). */
export function createRequest(token: string, body: string, options: { declaredLength?: number; headers?: Record<string, string> } = {}): string {
  const headers = Object.entries(options.headers ?? {}).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return (
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${options.declaredLength ?? Buffer.byteLength(body)}\r\n${headers}\r\n${body}`
  );
}
