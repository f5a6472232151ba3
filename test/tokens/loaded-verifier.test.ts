import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LoadedVerifier } from '../../src/tokens/loaded-verifier.js';
import type { TokenVerifier, Verification } from '../../src/tokens/token-verifier.js';

const valid: Verification = { valid: true, caller: { subject: 'someone', issuer: 'https://issuer.example' } };

/** A verifier that remembers every token it has verified. */
function remembering(): TokenVerifier & { started: boolean } {
  const seen = new Set<string>();
  return {
    started: false,
    verifyRemembered: (token) => (seen.has(token) ? valid : undefined),
    verify: async (token) => {
      seen.add(token);
      return valid;
    },
    async start() {
      this.started = true;
    },
  };
}

test('a loaded verifier remembers nothing until its code is loaded, then answers as the verifier it loaded', async () => {
  const inner = remembering();
  const { promise: loaded, resolve: finishLoading } = Promise.withResolvers<void>();
  const verifier = new LoadedVerifier(async () => {
    await loaded;
    return inner;
  });
  assert.equal(verifier.verifyRemembered('a'), undefined);
  const verdict = verifier.verify('a');
  const started = verifier.start();
  finishLoading();
  assert.deepEqual(await verdict, valid);
  await started;
  assert.equal(inner.started, true);
  assert.deepEqual(verifier.verifyRemembered('a'), valid);
  assert.equal(verifier.verifyRemembered('b'), undefined);
});

test('a load that fails is reported by start and by verify, not as an unhandled rejection', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    const verifier = new LoadedVerifier(async () => {
      throw new Error('no such module');
    });
    // Two turns of the event loop: an unhandled rejection would be reported by now.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(unhandled, []);
    await assert.rejects(verifier.start(), /no such module/);
    await assert.rejects(verifier.verify('a'), /no such module/);
    assert.equal(verifier.verifyRemembered('a'), undefined);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});
