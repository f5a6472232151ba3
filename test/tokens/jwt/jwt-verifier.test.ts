import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { JwtVerifier } from '../../../src/tokens/jwt/jwt-verifier.js';
import { KeySet, type VerificationKeys } from '../../../src/tokens/jwt/key-set.js';
import { keySetAt } from '../../../src/tokens/jwt/key-set-source.js';
import { AUDIENCE, claims, makeKey, signToken, startKeySetServer } from '../../helpers/key-set-server.js';

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** The issuer's real key set, with every key lookup (one per signature check) counted. */
function countingKeys(keys: KeySet): VerificationKeys & { lookups: number } {
  const counted = {
    lookups: 0,
    key: (...args: Parameters<KeySet['key']>) => {
      counted.lookups++;
      return keys.key(...args);
    },
    trustedUntil: () => keys.trustedUntil(),
    start: () => keys.start(),
  };
  return counted;
}

/** A verifier with the default rules, going by `now`, on a key-set server publishing one key. */
async function verifierOfOneKey(t: TestContext, now: () => number = Date.now) {
  const idp = await startKeySetServer(t);
  const key = await makeKey('ES256');
  idp.publish(key);
  const keys = countingKeys(new KeySet(keySetAt(idp.jwksUrl), { cooldownMs: 30_000, maxAgeMs: 600_000, log: silent, now }));
  const verifier = new JwtVerifier({ issuer: idp.issuer, audience: AUDIENCE, scope: 'plants:write', clockSkewS: 30 }, keys, { now });
  return { idp, key, keys, verifier };
}

test('a verified JWT is remembered until shortly before its exp: no signature check per request', async (t) => {
  let now = Date.now();
  const { idp, key, keys, verifier } = await verifierOfOneKey(t, () => now);

  const exp = Math.floor(now / 1000) + 3;
  const token = await signToken(key, claims(idp, { exp }));
  assert.equal(verifier.verifyRemembered(token), undefined, 'not known before its first check');
  assert.equal((await verifier.verify(token)).valid, true);
  for (let i = 0; i < 100; i++) assert.equal(verifier.verifyRemembered(token)?.valid, true);
  assert.equal((await verifier.verify(token)).valid, true);
  assert.equal(keys.lookups, 1, 'one signature check for 102 requests');

  // One second before exp the memory lets go, and the token, still valid, is checked again.
  now = exp * 1000 - 1001;
  assert.equal(verifier.verifyRemembered(token)?.valid, true);
  now += 1;
  assert.equal(verifier.verifyRemembered(token), undefined);
  assert.equal((await verifier.verify(token)).valid, true);
  assert.equal(keys.lookups, 2);
});

test('refused JWTs are not remembered as valid', async (t) => {
  const { idp, key, verifier } = await verifierOfOneKey(t);
  const withoutScope = await signToken(key, claims(idp, { scope: 'plants:read' }));
  for (let i = 0; i < 3; i++) {
    assert.deepEqual(await verifier.verify(withoutScope), {
      valid: false,
      reason: 'jwt_scope',
      scope: 'plants:write',
      caller: { subject: 'client-42', issuer: idp.issuer },
    });
  }
  assert.equal(verifier.verifyRemembered(withoutScope), undefined);
});
