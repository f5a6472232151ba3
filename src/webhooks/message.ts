import type { ClaimedMessage } from '../store/webhook-store.js';
import { newPlantToJson } from '../plants/plant.js';

/** The one event the service sends. */
export const PLANT_CREATED = 'plant.created';

/**
 * A message's body, the same on every attempt: the event, when the plant was
 * committed (RFC 3339), and the plant with its id's exact digits.
 */
export function messageBody(message: ClaimedMessage): string {
  return `{"type":"${PLANT_CREATED}","timestamp":"${message.createdAt.toISOString()}","data":${newPlantToJson(message.plant)}}`;
}

/** The `webhook-id` of a message: the same on every attempt, never the same for two messages. */
export function webhookId(subscriptionKey: string, message: ClaimedMessage): string {
  return `msg_${subscriptionKey}_${message.id.toString()}`;
}
