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

/** Posts one `webhook.ping` signed as a delivery is, outside the outbox (nothing stored, retried or counted), paused subscriptions included. */
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
