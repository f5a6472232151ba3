import { createHmac, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';

/** Standard Webhooks writes a secret as `whsec_` and the base64 of its key. */
const SECRET_PREFIX = 'whsec_';
/** Bytes of a new key: within the 24 to 64 that Standard Webhooks asks for. */
const KEY_BYTES = 32;

export function newSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(KEY_BYTES).toString('base64')}`;
}

/** A KeyObject, not the bytes: on Node.js 24 an HMAC keyed by a Buffer spends extra time checking whether it is a KeyObject. */
export function secretKey(secret: string): KeyObject {
  return createSecretKey(Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64'));
}

/** `webhook-signature` (Standard Webhooks): `v1,` and the base64 HMAC-SHA256 of `<id>.<timestamp>.<body>` per key, so either secret verifies mid-rotation. */
export function signatureHeader(keys: readonly KeyObject[], id: string, timestamp: number, body: string): string {
  return keys.map((key) => `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`).join(' ');
}

/** The Standard Webhooks headers of one attempt, a delivery's or a ping's; the timestamp is in seconds. */
export function signedHeaders(keys: readonly KeyObject[], id: string, body: string, now = Date.now()): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signatureHeader(keys, id, timestamp, body) };
}
