import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { B64TOKEN } from '../http/bearer-token.js';
import { parseRatePolicy, RATE_POLICY_SHAPE, type RatePolicy } from '../rate-limits/rate-policy.js';
import { keySetProblem } from '../tokens/jwt/key-set-document.js';
import { keyServerUrlProblem } from '../tokens/jwt/key-server-url.js';
import { ConfigError } from './setting.js';

// Each parser's ConfigError names `source`, the variable or flag the text came from.

export function parseInteger(text: string, source: string, min: number, max: number): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < min || Number(text) > max) {
    throw new ConfigError(`${source} must be a whole number from ${min} to ${max}, got ${JSON.stringify(text)}`);
  }
  return Number(text);
}

export function parseOneOf<T extends string>(text: string, source: string, allowed: readonly T[]): T {
  const value = text.trim().toLowerCase();
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(`${source} must be one of ${allowed.join(', ')}, got ${JSON.stringify(text)}`);
  }
  return value as T;
}

export function parseHost(text: string, source: string): string {
  const host = text.trim();
  if (host === '' || /[\s/]/.test(host)) {
    throw new ConfigError(`${source} must be a host name or IP address, got ${JSON.stringify(text)}`);
  }
  return host;
}

/** The names proxy-addr (Fastify's `trustProxy`) knows for address ranges. */
const PROXY_RANGES = ['loopback', 'linklocal', 'uniquelocal'];

export function parseTrustProxy(text: string, source: string): readonly string[] | undefined {
  if (text.trim().toLowerCase() === 'off') return undefined;
  const peers = text.split(',').map((peer) => peer.trim());
  for (const peer of peers) {
    const [address = '', bits, ...rest] = peer.split('/');
    const family = isIP(address);
    const maxBits = family === 6 ? 128 : 32;
    const valid =
      PROXY_RANGES.includes(peer) ||
      (family !== 0 && rest.length === 0 && (bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= maxBits)));
    if (!valid) {
      throw new ConfigError(
        `${source} must be off or a comma-separated list of addresses, CIDRs and ${PROXY_RANGES.join(', ')}, got ${JSON.stringify(peer)}`,
      );
    }
  }
  return Object.freeze(peers);
}

/** The fewest characters of a secret that clients present: 16 random base64 characters are 96 bits. */
export const LEAST_SECRET_LENGTH = 16;

/** RFC 6750's characters, so that clients can present it. Never repeated in a message: it may be the secret. */
export function parseBearerSecret(text: string, source: string): string {
  const secret = text.trim();
  if (!B64TOKEN.test(secret)) throw new ConfigError(`${source} must be a bearer token: letters, digits and -._~+/ (then = padding), no spaces`);
  if (secret.length < LEAST_SECRET_LENGTH) throw new ConfigError(`${source} must be at least ${LEAST_SECRET_LENGTH} characters long`);
  return secret;
}

export function parseWord(text: string, source: string, what: string): string {
  const word = text.trim();
  if (word === '' || /\s/.test(word)) throw new ConfigError(`${source} must be ${what} without spaces, got ${JSON.stringify(text)}`);
  return word;
}

/** The URL of an issuer or key set, kept as written: an issuer is compared with a token's `iss` exactly. */
export function parseKeyServerUrl(text: string, source: string): string {
  const url = text.trim();
  const problem = keyServerUrlProblem(url);
  if (problem !== undefined) throw new ConfigError(`${source} must be ${problem}, got ${JSON.stringify(text)}`);
  return url;
}

/** A readable JSON Web Key Set of public keys; the file is read again when the keys must be refreshed. */
export function parseKeySetFile(text: string, source: string): string {
  const path = resolve(text.trim());
  let document: unknown;
  try {
    document = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`${source} must be a readable JSON file: ${(error as Error).message.split('\n')[0]}`);
  }
  const problem = keySetProblem(document);
  if (problem !== undefined) throw new ConfigError(`${source} must hold a JSON Web Key Set: ${problem}`);
  return path;
}

export function parseRateLimit(text: string, source: string): RatePolicy {
  const policy = parseRatePolicy(text, 'default');
  if (policy === undefined) throw new ConfigError(`${source} must be ${RATE_POLICY_SHAPE}, got ${JSON.stringify(text)}`);
  return policy;
}
