import type { TokenVerifier, Verification } from './token-verifier.js';

/** Three base64url segments joined by dots (RFC 7515, section 7.1); the signature is empty only for `alg: none`. */
const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]*$/;

/** The most one header line holds behind nginx's defaults, so no working client sends a longer JWT (docs/jwt-tokens.md). */
export const JWT_MAX_LENGTH = 8192;

/**
 * A JWT has dots, a store token never does. Memory is asked first, so a remembered store token costs one map lookup, as
 * without JWTs; a JWT longer than JWT_MAX_LENGTH goes to the store's verifier, which refuses it unlooked-up.
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
