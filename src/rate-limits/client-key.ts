import { createHash } from 'node:crypto';
import type { Caller } from '../tokens/token-verifier.js';

/** Longer keys are stored as their hash: a JWT's issuer and subject are the identity provider's to choose. */
const LONGEST_KEY = 200;

const keys = new WeakMap<Caller, string>();

/**
 * A store token's name, so a rotated token keeps its client's bucket, or a JWT's issuer and subject: the same in every
 * process, which makes the quota one. Kept per caller: a remembered token's caller is the same object on every request.
 */
export function clientKey(caller: Caller): string {
  let key = keys.get(caller);
  if (key === undefined) {
    const text = caller.name !== undefined ? `token:${caller.name}` : `jwt:${caller.issuer} ${caller.subject ?? ''}`;
    key = text.length <= LONGEST_KEY ? text : `jwt:sha256:${createHash('sha256').update(text).digest('hex')}`;
    keys.set(caller, key);
  }
  return key;
}
