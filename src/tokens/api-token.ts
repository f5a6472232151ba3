import * as crypto from 'node:crypto';

/** Every token starts with this, so that a leaked one is easy to recognise and scan for. */
export const TOKEN_PREFIX = 'ps_';

/** The length of every token: the prefix and 32 bytes in base64url, 43 characters. */
export const TOKEN_LENGTH = TOKEN_PREFIX.length + 43;
const TOKEN_SHAPE = new RegExp(`^${TOKEN_PREFIX}[A-Za-z0-9_-]{43}$`);

/**
 * Whether `text` could be a token of this service's making. One that cannot
 * is refused without a lookup: no store holds it.
 */
export function hasTokenShape(text: string): boolean {
  return text.length === TOKEN_LENGTH && TOKEN_SHAPE.test(text);
}

/** A new opaque token: the prefix and 256 random bits in base64url. */
export function generateToken(): string {
  return TOKEN_PREFIX + crypto.randomBytes(32).toString('base64url');
}

/**
 * The stored form of a token. A single SHA-256 is enough: the token carries
 * 256 bits of entropy, so there is nothing to guess that a slow hash would protect.
 */
export function hashToken(token: string): string {
  return sha256Hex(token);
}

// crypto.hash does in one call what createHash does in three, in half the time; Node.js 20 has it from 20.12 on.
const sha256Hex: (text: string) => string =
  typeof crypto.hash === 'function' ? (text) => crypto.hash('sha256', text, 'hex') : (text) => crypto.createHash('sha256').update(text).digest('hex');

/** A name that a person types on the command line: starts with a letter, so it never looks like an id. */
export const TOKEN_NAME = /^[A-Za-z][A-Za-z0-9._-]{0,63}$/;

/** What is wrong with `name` as a token's name, or undefined when nothing is. */
export function tokenNameProblem(name: string): string | undefined {
  if (TOKEN_NAME.test(name)) return undefined;
  return `token name ${JSON.stringify(name)} must start with a letter and hold at most 64 letters, digits, '.', '_' or '-'`;
}
