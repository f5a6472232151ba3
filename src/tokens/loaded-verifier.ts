import type { TokenVerifier, Verification } from './token-verifier.js';

/**
 * A verifier whose code is loaded when it is made, for one that is not
 * always needed: the JWT verifier brings jose, about 2.6 MiB of memory that a
 * service checking only its own tokens never uses. Loading starts at once;
 * `start` (which `serve` awaits before it listens) and `verify` wait for it,
 * and until it is done nothing is remembered, so `verifyRemembered` answers
 * undefined and the caller takes the asynchronous way.
 */
export class LoadedVerifier implements TokenVerifier {
  readonly #loading: Promise<TokenVerifier>;
  #loaded: TokenVerifier | undefined;

  constructor(load: () => Promise<TokenVerifier>) {
    this.#loading = load().then((verifier) => (this.#loaded = verifier));
    // A failed load is reported by start and verify, whichever comes first.
    this.#loading.catch(() => undefined);
  }

  verifyRemembered(token: string): Verification | undefined {
    return this.#loaded?.verifyRemembered(token);
  }

  async verify(token: string): Promise<Verification> {
    return (this.#loaded ?? (await this.#loading)).verify(token);
  }

  async start(): Promise<void> {
    await (await this.#loading).start();
  }
}
