import type { TokenVerifier, Verification } from './token-verifier.js';

/** Three base64url segments joined by dots (RFC 7515, section 7.1); the signature is empty only for `alg: none`. */
const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]*$/;

/**
 * The longest JWT checked (docs/jwt-tokens.md). Identity providers' access
 * tokens are 1 to 2 KiB, rarely 4 with many roles or groups; 8 KiB is the
 * most one header line may hold behind nginx's defaults, so no working
 * client sends a longer one, and none gets parsed or remembered here.
 */
export const JWT_MAX_LENGTH = 8192;

/**
 * The store's tokens and JWTs together. A token is sent by its shape: a JWT
 * has dots, a store token never does. The store's verifier is asked first
 * from memory, so that a remembered store token costs what it costs without
 * JWTs: one map lookup, no pattern match. A JWT longer than JWT_MAX_LENGTH
 * goes to the store's verifier, which refuses it as unknown, unlooked-up.
 */
export class OpaqueThenJwtVerifier implements TokenVerifier {
  readonly #opaque: TokenVerifier;
  readonly #jwt: TokenVerifier;

  constructor(opaque: TokenVerifier, jwt: TokenVerifier) {
    this.#opaque = opaque;
    this.#jwt = jwt;
  }

  verifyRemembered(token: string): Verification | undefined {
    return this.#opaque.verifyRemembered(token) ?? (isJwt(token) ? this.#jwt.verifyRemembered(token) : undefined);
  }

  verify(token: string): Promise<Verification> {
    return isJwt(token) ? this.#jwt.verify(token) : this.#opaque.verify(token);
  }

  async start(): Promise<void> {
    await Promise.all([this.#opaque.start(), this.#jwt.start()]);
  }
}

function isJwt(token: string): boolean {
  return token.length <= JWT_MAX_LENGTH && JWT_SHAPE.test(token);
}
