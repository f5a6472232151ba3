import { randomBytes } from 'node:crypto';
import type { Subscription, WebhookStore } from '../store/webhook-store.js';
import { newSecret } from './signature.js';
import { webhookUrlProblem } from './webhook-url.js';

/** How long a rotated-out secret still signs deliveries, beside the new one. */
export const PREVIOUS_SECRET_MS = 24 * 3_600_000;

/** Most characters of a subscription's description. */
const DESCRIPTION_MAX = 500;

export type AddResult = { added: true; subscription: Subscription } | { added: false; problem: string };

/** Stores a subscription to `url` with a new secret; it receives the plants created from now on. */
export async function addSubscription(store: WebhookStore, url: string, description: string | undefined, now = new Date()): Promise<AddResult> {
  const problem = webhookUrlProblem(url);
  // The URL is not repeated: it may hold a password.
  if (problem !== undefined) return { added: false, problem: `the URL must be ${problem}` };
  if (description !== undefined && description.length > DESCRIPTION_MAX) {
    return { added: false, problem: `the description must be at most ${DESCRIPTION_MAX} characters` };
  }
  const subscription = await store.addSubscription({
    url: new URL(url).toString(),
    description: description ?? null,
    secret: newSecret(),
    key: randomBytes(9).toString('base64url'),
    createdAt: now,
  });
  return { added: true, subscription };
}

/** Gives a subscription a new secret; the old one goes on signing beside it for `PREVIOUS_SECRET_MS`. */
export function rotateSecret(store: WebhookStore, id: number, now = new Date()): Promise<Subscription | undefined> {
  return store.rotateSecret(id, newSecret(), new Date(now.getTime() + PREVIOUS_SECRET_MS));
}
