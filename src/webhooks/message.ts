import { randomBytes } from 'node:crypto';
import type { ClaimedMessage } from '../store/webhook-store.js';
import { newPlantToJson } from '../plants/plant.js';

/** The event of every message of the outbox. */
export const PLANT_CREATED = 'plant.created';

/** The event `plantstore webhook ping` sends: a test, which receivers answer 2xx and otherwise ignore. */
export const WEBHOOK_PING = 'webhook.ping';

/**
 * A message's body, the same on every attempt: the event, when the plant was
 * committed (RFC 3339), and the plant with its id's exact digits.
 */
export function messageBody(message: ClaimedMessage): string {
  return `{"type":"${PLANT_CREATED}","timestamp":"${message.createdAt.toISOString()}","data":${newPlantToJson(message.plant)}}`;
}

/** The `webhook-id` of a message: the same on every attempt, never the same for two messages. */
export function webhookId(subscriptionKey: string, messageId: bigint): string {
  return `msg_${subscriptionKey}_${messageId.toString()}`;
}

/** A ping's body: the event and when it was sent; its data is empty. */
export function pingBody(now: Date): string {
  return `{"type":"${WEBHOOK_PING}","timestamp":"${now.toISOString()}","data":{}}`;
}

/**
 * A ping's `webhook-id`: the subscription's key as in its messages', then
 * `ping` and random digits, so it is never a message's id, nor another ping's
 * (a receiver that deduplicates still answers each ping).
 */
export function pingId(subscriptionKey: string): string {
  return `msg_${subscriptionKey}_ping${randomBytes(8).toString('hex')}`;
}

/**
 * The number of the message whose `webhook-id` this is, with the key of its
 * subscription, or undefined when it is not a message's id. The key may
 * hold `_` itself (base64url): the number is what follows the last one.
 */
export function parseWebhookId(id: string): { subscriptionKey: string; messageId: bigint } | undefined {
  const match = /^msg_(.+)_(\d{1,19})$/.exec(id);
  if (match === null) return undefined;
  const messageId = BigInt(match[2]!);
  return messageId > 2n ** 63n - 1n ? undefined : { subscriptionKey: match[1]!, messageId };
}
