import { randomBytes } from 'node:crypto';
import type { Subscription, WebhookStore } from '../store/webhook-store.js';
import { newSecret } from './signature.js';

/** How long a rotated-out secret still signs deliveries, beside the new one: each its own window, from its rotation. */
export const RETIRED_SECRET_MS = 24 * 3_600_000;

/**
 * Most retired secrets signing at once: each adds a signature to every delivery and an HMAC to its cost. Past it a
 * rotation is refused rather than cutting short the oldest's window, as promised to a receiver.
 */
export const MOST_RETIRED_SECRETS = 5;

const DESCRIPTION_MAX = 500;

export type AddResult =
  | { added: true; subscription: Subscription }
  /** `duplicateOf`: refused because that active subscription already has the URL. */
  | { added: false; problem: string; duplicateOf?: number };

/** Stores a subscription with a new secret, for the plants created after it; a URL already subscribed is refused unless `allowDuplicate`. */
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

/** Gives a subscription another URL, checked as an add's, and a description (kept when undefined, removed when empty); pending messages follow. */
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

/** Gives a subscription a new secret; the replaced one signs beside it for `graceMs` (0 after a leak), as do earlier ones until their windows end. */
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

/** Why `text` cannot be a subscription's URL, or undefined: credentials are refused, as they would sit in the store and every listing. */
export function webhookUrlProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'an absolute http:// or https:// URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `an http:// or https:// URL, not ${url.protocol}//`;
  if (url.username !== '' || url.password !== '') return 'a URL without credentials (user:password@): receivers check the signature instead';
  return undefined;
}
