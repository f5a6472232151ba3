import * as crypto from 'node:crypto';

/** Every token starts with this, so that a leaked one is easy to recognise and scan for. */
export const TOKEN_PREFIX = 'ps_';

export const TOKEN_LENGTH = TOKEN_PREFIX.length + 43;
const TOKEN_SHAPE = new RegExp(`^${TOKEN_PREFIX}[A-Za-z0-9_-]{43}$`);

/** One that cannot be a token of this service's making is refused without a lookup. */
export function hasTokenShape(text: string): boolean {
  return text.length === TOKEN_LENGTH && TOKEN_SHAPE.test(text);
}

export function generateToken(): string {
  return TOKEN_PREFIX + crypto.randomBytes(32).toString('base64url');
}

/** A single SHA-256 is enough: with 256 random bits there is nothing to guess that a slow hash would protect. */
export function hashToken(token: string): string {
  return sha256Hex(token);
}

// crypto.hash is faster than createHash; Node.js 20 has it from 20.12 on.
const sha256Hex: (text: string) => string =
  typeof crypto.hash === 'function' ? (text) => crypto.hash('sha256', text, 'hex') : (text) => crypto.createHash('sha256').update(text).digest('hex');

/** Starts with a letter, so that a name typed on the command line never looks like an id. */
export const TOKEN_NAME = /^[A-Za-z][A-Za-z0-9._-]{0,63}$/;

export function tokenNameProblem(name: string): string | undefined {
  if (TOKEN_NAME.test(name)) return undefined;
  return `token name ${JSON.stringify(name)} must start with a letter and hold at most 64 letters, digits, '.', '_' or '-'`;
}
