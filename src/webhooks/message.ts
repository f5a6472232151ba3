import { randomBytes } from 'node:crypto';
import type { ClaimedMessage } from '../store/webhook-store.js';
import { newPlantToJson } from '../plants/plant.js';

export const PLANT_CREATED = 'plant.created';

/** The event `plantstore webhook ping` sends: a test, which receivers answer 2xx and otherwise ignore. */
export const WEBHOOK_PING = 'webhook.ping';

/** A message's body, the same on every attempt; the plant's id keeps its exact digits. */
export function messageBody(message: ClaimedMessage): string {
  return `{"type":"${PLANT_CREATED}","timestamp":"${message.createdAt.toISOString()}","data":${newPlantToJson(message.plant)}}`;
}

/** The `webhook-id` of a message: the same on every attempt, never the same for two messages. */
export function webhookId(subscriptionKey: string, messageId: bigint): string {
  return `msg_${subscriptionKey}_${messageId.toString()}`;
}

export function pingBody(now: Date): string {
  return `{"type":"${WEBHOOK_PING}","timestamp":"${now.toISOString()}","data":{}}`;
}

/** A ping's `webhook-id`: `ping` and random digits, never a message's nor another ping's, so a receiver that deduplicates answers each. */
export function pingId(subscriptionKey: string): string {
  return `msg_${subscriptionKey}_ping${randomBytes(8).toString('hex')}`;
}

/** The message a `webhook-id` names, or undefined. The key may hold `_` itself (base64url): the number follows the last one. */
export function parseWebhookId(id: string): { subscriptionKey: string; messageId: bigint } | undefined {
  const match = /^msg_(.+)_(\d{1,19})$/.exec(id);
  if (match === null) return undefined;
  const messageId = BigInt(match[2]!);
  return messageId > 2n ** 63n - 1n ? undefined : { subscriptionKey: match[1]!, messageId };
}
