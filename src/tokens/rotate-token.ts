import type { Store, TokenRecord } from '../store/store.js';
import { generateToken, hashToken, tokenNameProblem } from './api-token.js';

/** A day to switch a rotated token's clients. */
export const DEFAULT_ROTATION_GRACE_MS = 24 * 3_600_000;

export type RotateResult =
  | { rotated: true; token: string; record: TokenRecord; retiring: TokenRecord[] }
  | { rotated: false; reason: 'invalid-name' | 'no-active-token' | 'name-taken'; problem: string };

/**
 * The old token works on for `graceMs`, so its clients switch with no downtime. The new one lives as long as the old one
 * was made to, unless `expiresInMs`, and keeps its rate limit: the client is the same.
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

function lifetimeOf(token: TokenRecord | undefined): number | undefined {
  if (token === undefined || token.expiresAt === null) return undefined;
  return token.expiresAt.getTime() - token.createdAt.getTime();
}
