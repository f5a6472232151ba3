import type { ClaimedMessage } from '../store/webhook-store.js';
import type { DeliverySpans } from '../tracing/delivery-spans.js';
import type { DeliveryTarget } from './delivery-target.js';
import { messageBody, webhookId } from './message.js';
import { type AttemptResult, postMessage } from './post-message.js';
import { signedHeaders } from './signature.js';

/** One attempt of a message to its subscription's receiver; with traces on, it has a span and sends its `traceparent`. */
export async function attemptDelivery(target: DeliveryTarget, message: ClaimedMessage, timeoutMs: number, spans: DeliverySpans | undefined): Promise<AttemptResult> {
  const id = webhookId(target.subscription.key, message.id);
  const body = messageBody(message);
  const headers = signedHeaders(target.keys, id, body);
  const span = spans?.start({ traceParent: message.traceParent, attempt: message.attempt, webhookId: id, url: target.url }, headers);
  let result: AttemptResult = { delivered: false, error: 'the attempt failed to start' };
  try {
    result = await postMessage(target.pool, target.url, headers, body, timeoutMs);
    return result;
  } finally {
    span?.end(result);
  }
}
