import type { Store, TokenRecord } from '../store/store.js';
import { generateToken, hashToken, TOKEN_NAME } from './api-token.js';

export type IssueResult =
  | { issued: true; token: string; record: TokenRecord }
  | { issued: false; reason: 'invalid-name' | 'name-taken'; problem: string };

/** Makes a token and stores its hash; the token itself is returned once and never stored. */
export async function issueToken(
  store: Store,
  request: { name: string; expiresInMs?: number },
  now: Date = new Date(),
): Promise<IssueResult> {
  if (!TOKEN_NAME.test(request.name)) {
    return {
      issued: false,
      reason: 'invalid-name',
      problem: `token name ${JSON.stringify(request.name)} must start with a letter and hold at most 64 letters, digits, '.', '_' or '-'`,
    };
  }
  const token = generateToken();
  const expiresAt = request.expiresInMs === undefined ? null : new Date(now.getTime() + request.expiresInMs);
  const record = await store.insertToken({ name: request.name, hash: hashToken(token), createdAt: now, expiresAt });
  if (record === 'name-taken') {
    return { issued: false, reason: 'name-taken', problem: `an active token named ${JSON.stringify(request.name)} exists; revoke it or choose another name` };
  }
  return { issued: true, token, record };
}
