import type { TokenVerifier, Verification } from './token-verifier.js';

/**
 * Loads a verifier not always needed (the JWT verifier brings jose, memory a service of store tokens never uses).
 * Until it is loaded nothing is remembered, so `verifyRemembered` answers undefined.
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
