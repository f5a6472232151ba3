import type { Store, TokenRecord } from '../store/store.js';
import { generateToken, hashToken, tokenNameProblem } from './api-token.js';

/** How long a rotated token goes on working when no grace is given: a day to switch its clients. */
export const DEFAULT_ROTATION_GRACE_MS = 24 * 3_600_000;

export type RotateResult =
  | { rotated: true; token: string; record: TokenRecord; retiring: TokenRecord[] }
  | { rotated: false; reason: 'invalid-name' | 'no-active-token' | 'name-taken'; problem: string };

/**
 * Gives the name's active token a successor with a new secret. The old one
 * goes on working for `graceMs` (0: stops at once), so that its clients can
 * be switched with no downtime; a token still retiring from an earlier
 * rotation stops by then too. The new token expires after `expiresInMs`
 * when given, else lives as long as the old one was made to (or does not
 * expire, as it did not), and keeps the old one's rate limit: the client is the same.
 */
export async function rotateToken(
  store: Store,
  request: { name: string; graceMs: number; expiresInMs?: number },
  now: Date = new Date(),
): Promise<RotateResult> {
  const problem = tokenNameProblem(request.name);
  if (problem !== undefined) return { rotated: false, reason: 'invalid-name', problem };
  const active = (await store.listTokens()).find((token) => token.name === request.name && token.revokedAt === null);
  const lifetimeMs = request.expiresInMs ?? lifetimeOf(active);
  const token = generateToken();
  const record = {
    name: request.name,
    hash: hashToken(token),
    createdAt: now,
    expiresAt: lifetimeMs === undefined ? null : new Date(now.getTime() + lifetimeMs),
    rateLimit: active?.rateLimit ?? null,
  };
  const stored = await store.replaceToken(record, new Date(now.getTime() + request.graceMs), { requireActive: true });
  if (stored === 'no-active-token') {
    return { rotated: false, reason: stored, problem: `no active token named ${JSON.stringify(request.name)} to rotate; create one with token create` };
  }
  if (stored === 'name-taken') {
    return { rotated: false, reason: stored, problem: `the token named ${JSON.stringify(request.name)} was replaced meanwhile; list the tokens and try again` };
  }
  return { rotated: true, token, record: stored.record, retiring: stored.retired };
}

/** How long a token was made to live; undefined when it does not expire (or there is none). */
function lifetimeOf(token: TokenRecord | undefined): number | undefined {
  if (token === undefined || token.expiresAt === null) return undefined;
  return token.expiresAt.getTime() - token.createdAt.getTime();
}
