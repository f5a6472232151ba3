import { createHmac, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';

/** One request the receiver took, its signature checked. */
export interface Received {
  webhookId: string;
  timestamp: number;
  body: string;
  /** The plant's id as its digits, read from the body without passing through a number. */
  plantId: string;
  type: string;
  data: Record<string, unknown>;
  /** How many of the header's signatures the receiver's secrets verified. */
  verifiedSignatures: number;
  signatures: string[];
  status: number;
  /** The W3C `traceparent` the request carried, if any. */
  traceParent: string | undefined;
  /** When its body had arrived, on performance.now()'s clock. */
  arrivedAt: number;
}

/** What the receiver answers a request with: a status, a status `afterMs` from now, or `hang` to never answer. */
export type Answer = number | { status: number; afterMs: number } | 'hang';

/**
 * A webhook receiver on loopback that checks every request the way the
 * Standard Webhooks specification says, with its own implementation (not the
 * service's): the signed content is `<webhook-id>.<webhook-timestamp>.<body>`,
 * each space-separated `v1,<base64>` in `webhook-signature` is an
 * HMAC-SHA256 with the base64 key after `whsec_`, and one match verifies.
 * A request that does not verify is answered 401 and recorded as such.
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  /** Requests that failed verification, with the reason. */
  readonly rejected: string[] = [];
  secrets: string[] = [];
  /** Decides each answer; every request delivered with 204 by default. */
  answer: (request: { webhookId: string; plantId: string; attempt: number }) => Answer = () => 204;
  /** The body of an answer of 300 or more: what a receiver says about its failure, read and stored by the service. */
  failureBody = 'not now';
  readonly #server: http.Server;
  readonly #hanging = new Set<http.ServerResponse>();
  #port = 0;

  private constructor() {
    this.#server = http.createServer((request, response) => this.#handle(request, response));
    this.#server.keepAliveTimeout = 60_000;
  }

  static async start(t: TestContext, port = 0): Promise<WebhookReceiver> {
    const receiver = new WebhookReceiver();
    await receiver.listen(port);
    t.after(() => receiver.close());
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${this.#port}/hooks/plants`;
  }

  async listen(port = this.#port): Promise<void> {
    this.#server.listen(port, '127.0.0.1');
    await once(this.#server, 'listening');
    this.#port = (this.#server.address() as AddressInfo).port;
  }

  /** Stops listening and cuts every connection, hanging requests included: the receiver is down. */
  async close(): Promise<void> {
    for (const response of this.#hanging) response.destroy();
    this.#hanging.clear();
    if (!this.#server.listening) return;
    const closed = once(this.#server, 'close');
    this.#server.close();
    this.#server.closeAllConnections();
    await closed;
  }

  /** The 2xx deliveries, by plant id. */
  deliveredByPlant(): Map<string, Received[]> {
    const byPlant = new Map<string, Received[]>();
    for (const request of this.received) {
      if (request.status < 200 || request.status > 299) continue;
      byPlant.set(request.plantId, [...(byPlant.get(request.plantId) ?? []), request]);
    }
    return byPlant;
  }

  /** Every request of each webhook-id, delivered or not. */
  attemptsById(): Map<string, Received[]> {
    const byId = new Map<string, Received[]>();
    for (const request of this.received) byId.set(request.webhookId, [...(byId.get(request.webhookId) ?? []), request]);
    return byId;
  }

  #handle(request: http.IncomingMessage, response: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const problem = this.#problem(request, body);
      if (problem !== undefined) {
        this.rejected.push(problem);
        response.writeHead(401).end();
        return;
      }
      const webhookId = String(request.headers['webhook-id']);
      const signatures = String(request.headers['webhook-signature']).split(' ');
      const timestamp = Number(request.headers['webhook-timestamp']);
      // The id's digits straight from the text: JSON.parse would round an id beyond 2^53.
      const plantId = /"data":\{"id":(-?\d+)[,}]/.exec(body)?.[1] ?? '';
      const parsed = JSON.parse(body) as { type: string; data: Record<string, unknown> };
      const attempt = this.received.filter((earlier) => earlier.webhookId === webhookId).length + 1;
      const answer = this.answer({ webhookId, plantId, attempt });
      const record: Received = {
        webhookId,
        timestamp,
        body,
        plantId,
        type: parsed.type,
        data: parsed.data,
        verifiedSignatures: this.#verified(webhookId, timestamp, body, signatures),
        signatures,
        status: answer === 'hang' ? 0 : typeof answer === 'number' ? answer : answer.status,
        traceParent: typeof request.headers.traceparent === 'string' ? request.headers.traceparent : undefined,
        arrivedAt: performance.now(),
      };
      this.received.push(record);
      if (answer === 'hang') {
        this.#hanging.add(response);
        response.on('close', () => this.#hanging.delete(response));
        return;
      }
      const send = () => response.writeHead(record.status, { 'content-type': 'text/plain' }).end(record.status >= 300 ? this.failureBody : '');
      if (typeof answer === 'number') send();
      else setTimeout(send, answer.afterMs);
    });
  }

  #problem(request: http.IncomingMessage, body: string): string | undefined {
    if (request.method !== 'POST') return `method ${request.method}`;
    if (request.headers['content-type'] !== 'application/json') return `content-type ${request.headers['content-type']}`;
    const id = request.headers['webhook-id'];
    const timestamp = request.headers['webhook-timestamp'];
    const signature = request.headers['webhook-signature'];
    if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signature !== 'string') return 'missing webhook headers';
    if (!/^\d+$/.test(timestamp) || Math.abs(Date.now() / 1000 - Number(timestamp)) > 5 * 60) return `timestamp ${timestamp} out of tolerance`;
    if (this.#verified(id, Number(timestamp), body, signature.split(' ')) === 0) return `no signature verifies for ${id}`;
    return undefined;
  }

  #verified(id: string, timestamp: number, body: string, signatures: readonly string[]): number {
    return this.secrets.reduce((verified, secret) => verified + signaturesBy(secret, id, timestamp, body, signatures), 0);
  }

  /** Whether one of the request's signatures verifies with `secret`, known to the receiver or not. */
  static signedWith(request: Received, secret: string): boolean {
    return signaturesBy(secret, request.webhookId, request.timestamp, request.body, request.signatures) > 0;
  }
}

/** How many of `signatures` verify with `secret`. */
function signaturesBy(secret: string, id: string, timestamp: number, body: string, signatures: readonly string[]): number {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = Buffer.from(createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64'));
  let verified = 0;
  for (const signature of signatures) {
    const [version, value = ''] = signature.split(',', 2);
    const given = Buffer.from(value);
    if (version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected)) verified += 1;
  }
  return verified;
}
