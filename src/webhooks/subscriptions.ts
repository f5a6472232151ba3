import { randomBytes } from 'node:crypto';
import type { Subscription, WebhookStore } from '../store/webhook-store.js';
import { newSecret } from './signature.js';
import { webhookUrlProblem } from './webhook-url.js';

/** How long a rotated-out secret still signs deliveries, beside the new one: each its own window, from its rotation. */
export const RETIRED_SECRET_MS = 24 * 3_600_000;

/**
 * Most retired secrets signing at once. Each adds a 48-byte signature to
 * every delivery's header and an HMAC to its cost; 5 keep the header under
 * 300 bytes and leave room to rotate again after a mistake. Past it a
 * rotation is refused rather than cutting the oldest short: a receiver may
 * still rely on it until the end it was promised.
 */
export const MOST_RETIRED_SECRETS = 5;

/** Most characters of a subscription's description. */
const DESCRIPTION_MAX = 500;

export type AddResult =
  | { added: true; subscription: Subscription }
  /** `duplicateOf`: refused because that active subscription already has the URL. */
  | { added: false; problem: string; duplicateOf?: number };

/**
 * Stores a subscription to `url` with a new secret; it receives the plants
 * created from now on. A URL that an active subscription already has is
 * refused unless `allowDuplicate`: two subscriptions send every plant twice.
 */
export async function addSubscription(
  store: WebhookStore,
  url: string,
  description: string | undefined,
  { allowDuplicate = false, now = new Date() }: { allowDuplicate?: boolean; now?: Date } = {},
): Promise<AddResult> {
  const problem = subscriptionProblem(url, description);
  if (problem !== undefined) return { added: false, problem };
  const added = await store.addSubscription(
    {
      url: new URL(url).toString(),
      description: description ?? null,
      secret: newSecret(),
      key: randomBytes(9).toString('base64url'),
      createdAt: now,
    },
    allowDuplicate,
  );
  if ('duplicateOf' in added) {
    return { added: false, problem: `webhook subscription ${added.duplicateOf} already delivers to this URL`, duplicateOf: added.duplicateOf };
  }
  return { added: true, subscription: added };
}

export type UpdateResult =
  | { updated: true; subscription: Subscription }
  /** `duplicateOf`: refused because that other active subscription already has the URL. */
  | { updated: false; problem: string; duplicateOf?: number }
  | undefined;

/**
 * Gives a subscription another URL, checked as an add checks it, and a
 * description (the one it has when undefined, none when empty). Its pending
 * messages go to the new URL. Undefined when no active subscription has this id.
 */
export async function updateSubscription(
  store: WebhookStore,
  id: number,
  url: string,
  description: string | undefined,
  { allowDuplicate = false }: { allowDuplicate?: boolean } = {},
): Promise<UpdateResult> {
  const problem = subscriptionProblem(url, description);
  if (problem !== undefined) return { updated: false, problem };
  const change = { id, url: new URL(url).toString(), ...(description === undefined ? {} : { description: description === '' ? null : description }) };
  const updated = await store.updateSubscription(change, allowDuplicate);
  if (updated === undefined) return undefined;
  if ('duplicateOf' in updated) {
    return { updated: false, problem: `webhook subscription ${updated.duplicateOf} already delivers to this URL`, duplicateOf: updated.duplicateOf };
  }
  return { updated: true, subscription: updated };
}

/** Why a subscription cannot have this URL or description, or undefined when it can. */
function subscriptionProblem(url: string, description: string | undefined): string | undefined {
  const problem = webhookUrlProblem(url);
  // The URL is not repeated: it may hold a password.
  if (problem !== undefined) return `the URL must be ${problem}`;
  if (description !== undefined && description.length > DESCRIPTION_MAX) return `the description must be at most ${DESCRIPTION_MAX} characters`;
  return undefined;
}

export type RotateResult =
  | { rotated: true; subscription: Subscription; retiredUntil: Date }
  | { rotated: false; problem: string }
  | undefined;

/**
 * Gives a subscription a new secret; the one it replaces goes on signing
 * beside it for `graceMs` (RETIRED_SECRET_MS unless given; 0 stops it at
 * once, after a leak), and so do those retired before, each until its own
 * window ends. Undefined when no active subscription has this id.
 */
export async function rotateSecret(store: WebhookStore, id: number, now = new Date(), graceMs = RETIRED_SECRET_MS): Promise<RotateResult> {
  const retiredUntil = new Date(now.getTime() + graceMs);
  const rotated = await store.rotateSecret({ id, secret: newSecret(), retiredUntil, now, mostRetired: MOST_RETIRED_SECRETS });
  if (rotated === undefined) return undefined;
  if ('liveUntil' in rotated) {
    return {
      rotated: false,
      problem:
        `webhook subscription ${id} has ${MOST_RETIRED_SECRETS} retired secrets still signing, the most at once; ` +
        `rotate again once the oldest stops, at ${rotated.liveUntil.toISOString()}`,
    };
  }
  return { rotated: true, subscription: rotated, retiredUntil };
}

/** The secrets that sign a delivery made at `now`: the current one, then each retired one whose window has not ended. */
export function signingSecrets(subscription: Subscription, now: number): string[] {
  return [subscription.secret, ...subscription.retiredSecrets.filter((retired) => retired.until.getTime() > now).map((retired) => retired.secret)];
}
