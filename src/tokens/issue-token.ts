import type { Store, TokenRecord } from '../store/store.js';
import { generateToken, hashToken, tokenNameProblem } from './api-token.js';

export type IssueResult =
  | { issued: true; token: string; record: TokenRecord; revoked: TokenRecord[] }
  | { issued: false; reason: 'invalid-name' | 'name-taken'; problem: string };

/**
 * The token is returned once and only its hash stored. `replace` revokes the name's working tokens in the same
 * transaction, so that a script can run again and get a working token.
 */
export async function issueToken(
  store: Store,
  request: { name: string; expiresInMs?: number; replace?: boolean; rateLimit?: string },
  now: Date = new Date(),
): Promise<IssueResult> {
  const problem = tokenNameProblem(request.name);
  if (problem !== undefined) return { issued: false, reason: 'invalid-name', problem };
  const token = generateToken();
  const expiresAt = request.expiresInMs === undefined ? null : new Date(now.getTime() + request.expiresInMs);
  const record = { name: request.name, hash: hashToken(token), createdAt: now, expiresAt, rateLimit: request.rateLimit ?? null };
  const stored = request.replace === true ? await store.replaceToken(record, now, { requireActive: false }) : await store.insertToken(record);
  if (stored === 'name-taken' || stored === 'no-active-token') {
    return { issued: false, reason: 'name-taken', problem: `an active token named ${JSON.stringify(request.name)} exists; revoke it or choose another name` };
  }
  return 'retired' in stored ? { issued: true, token, record: stored.record, revoked: stored.retired } : { issued: true, token, record: stored, revoked: [] };
}
