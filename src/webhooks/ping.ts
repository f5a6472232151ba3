import type { Subscription } from '../store/webhook-store.js';
import { pingBody, pingId } from './message.js';
import { type AttemptResult, loadReceiverClient, postMessage, receiverPool } from './post-message.js';
import { secretKey, signedHeaders } from './signature.js';
import { signingSecrets } from './subscriptions.js';

export interface PingResult {
  webhookId: string;
  result: AttemptResult;
  /** From sending to the whole answer, or to the failure. */
  durationMs: number;
}

/**
 * Posts one `webhook.ping` to the subscription's URL now, signed and sent as
 * a delivery is (the same headers, secrets, timeout and answer rules), but
 * outside the outbox: nothing is stored, retried or counted, and a paused
 * subscription is pinged too, so its receiver can be checked before a resume.
 */
export async function pingSubscription(subscription: Subscription, timeoutMs: number, now = new Date()): Promise<PingResult> {
  const webhookId = pingId(subscription.key);
  const body = pingBody(now);
  const keys = signingSecrets(subscription, now.getTime()).map(secretKey);
  const url = new URL(subscription.url);
  await loadReceiverClient();
  const receiver = receiverPool(url, 1);
  try {
    const started = performance.now();
    const result = await postMessage(receiver, url, signedHeaders(keys, webhookId, body, now.getTime()), body, timeoutMs);
    return { webhookId, result, durationMs: performance.now() - started };
  } finally {
    await receiver.destroy();
  }
}
