import type { TokenVerifier, Verification } from './token-verifier.js';

/** Three base64url segments joined by dots (RFC 7515, section 7.1); the signature is empty only for `alg: none`. */
const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]*$/;

/**
 * The store's tokens and JWTs together. A token is sent by its shape: a JWT
 * has dots, a store token never does. The store's verifier is asked first
 * from memory, so that a remembered store token costs what it costs without
 * JWTs: one map lookup, no pattern match.
 */
export class OpaqueThenJwtVerifier implements TokenVerifier {
  readonly #opaque: TokenVerifier;
  readonly #jwt: TokenVerifier;

  constructor(opaque: TokenVerifier, jwt: TokenVerifier) {
    this.#opaque = opaque;
    this.#jwt = jwt;
  }

  verifyRemembered(token: string): Verification | undefined {
    return this.#opaque.verifyRemembered(token) ?? (JWT_SHAPE.test(token) ? this.#jwt.verifyRemembered(token) : undefined);
  }

  verify(token: string): Promise<Verification> {
    return JWT_SHAPE.test(token) ? this.#jwt.verify(token) : this.#opaque.verify(token);
  }

  async start(): Promise<void> {
    await Promise.all([this.#opaque.start(), this.#jwt.start()]);
  }
}
