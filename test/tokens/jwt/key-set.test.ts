import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { claims, jwtApp, makeKey, signToken, startKeySetServer } from '../../helpers/key-set-server.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { FETCH_MAX_BYTES } from '../../../src/tokens/jwt/key-set-source.js';

test('a key added to the issuer set is fetched when a token names it, with no restart', async (t) => {
  const idp = await startKeySetServer(t);
  const [before, after] = [await makeKey('RS256'), await makeKey('ES256')];
  idp.publish(before);
  let now = Date.now();
  const app = await jwtApp(t, idp, { jwtJwksCooldownMs: 200 }, { now: () => now });
  assert.equal((await app.send(await signToken(before, claims(idp)))).status, 200);
  assert.equal(idp.keySetFetches, 1);

  idp.publish(before, after);
  now += 199;
  assert.equal((await app.send(await signToken(after, claims(idp)))).status, 401, 'within the cooldown of the first fetch the set is not fetched');
  assert.equal(idp.keySetFetches, 1);
  now += 1;
  const rotated = await app.send(await signToken(after, claims(idp)));
  assert.equal(rotated.status, 200);
  assert.equal(idp.keySetFetches, 2, 'the unknown kid fetched the set once');
  assert.equal((await app.send(await signToken(before, claims(idp, { sub: 'other' })))).status, 200, 'the old key still works while published');
  assert.equal(idp.keySetFetches, 2);
});

test('a key removed from the set is refused once the set is older than JWT_JWKS_MAX_AGE_MS, even for a token verified before', async (t) => {
  const idp = await startKeySetServer(t);
  const [old, current] = [await makeKey('ES256'), await makeKey('ES256')];
  idp.publish(old, current);
  let now = Date.now();
  const app = await jwtApp(t, idp, { jwtJwksCooldownMs: 100, jwtJwksMaxAgeMs: 1500 }, { now: () => now });
  const remembered = await signToken(old, claims(idp));
  assert.equal((await app.send(remembered)).status, 200);

  idp.publish(current);
  now += 1499;
  assert.equal((await app.send(remembered)).status, 200, 'within the max age the set is trusted');
  assert.equal(idp.keySetFetches, 1);
  now += 1;
  const refused = await app.send(remembered);
  assert.equal(refused.status, 401);
  assert.equal(idp.keySetFetches, 2, 'one fetch at the max age; the missing kid did not fetch again within the cooldown');
  assert.equal((await app.send(await signToken(current, claims(idp)))).status, 200);
});

test('a storm of made-up kids fetches the set at most once per cooldown', async (t) => {
  const idp = await startKeySetServer(t);
  const key = await makeKey('RS256');
  const forger = await makeKey('RS256');
  idp.publish(key);
  let now = Date.now();
  const app = await jwtApp(t, idp, { jwtJwksCooldownMs: 2000 }, { now: () => now });
  assert.equal((await app.send(await signToken(key, claims(idp)))).status, 200);
  const storm = async (size: number) => {
    const tokens = await Promise.all(Array.from({ length: size }, (_, i) => signToken({ ...forger, kid: `made-up-${i}-${Math.random()}` }, claims(idp))));
    return Promise.all(tokens.map(async (token) => (await app.send(token)).status));
  };
  assert.deepEqual(new Set(await storm(50)), new Set([401]));
  assert.equal(idp.keySetFetches, 1, 'within the cooldown of the first fetch: none');
  now += 2000;
  assert.deepEqual(new Set(await storm(50)), new Set([401]));
  assert.equal(idp.keySetFetches, 2, 'after the cooldown: exactly one for fifty unknown kids arriving together');
  assert.deepEqual(new Set(await storm(50)), new Set([401]));
  assert.equal(idp.keySetFetches, 2);
});

test('while the issuer is down, cached keys keep working and a token that needs a fetch answers 503 with Retry-After', async (t) => {
  const idp = await startKeySetServer(t);
  const [cached, rotated] = [await makeKey('EdDSA'), await makeKey('EdDSA')];
  idp.publish(cached);
  let now = Date.now();
  const app = await jwtApp(t, idp, { jwtJwksCooldownMs: 2000 }, { now: () => now });
  assert.equal((await app.send(await signToken(cached, claims(idp)))).status, 200);
  now += 2000; // past the cooldown, so that an unknown kid may fetch

  idp.down = true;
  assert.equal((await app.send(await signToken(cached, claims(idp, { sub: 'fresh-token' })))).status, 200, 'a cached key, a token never seen');
  const unknown = await app.send(await signToken(rotated, claims(idp)));
  assert.equal(unknown.status, 503);
  assert.deepEqual(await unknown.json(), {
    error: 503,
    message: "The identity provider's keys cannot be fetched to check this token; retry after the time in Retry-After",
    code: 'IDP_UNAVAILABLE',
  });
  assert.equal(unknown.headers.get('retry-after'), '2', 'the seconds left in the cooldown of the failed fetch');
  assert.equal(idp.keySetFetches, 2);

  // The failed fetch is remembered: more unknown kids within the cooldown do not fetch again.
  now += 1500;
  for (let i = 0; i < 10; i++) assert.equal((await app.send(await signToken({ ...rotated, kid: `other-${i}` }, claims(idp)))).status, 503);
  assert.equal(idp.keySetFetches, 2, 'no fetch within the cooldown of the failed one');

  idp.down = false;
  idp.publish(cached, rotated);
  const late = await app.send(await signToken(rotated, claims(idp)));
  assert.equal(late.headers.get('retry-after'), '1', 'half a second left, rounded up');
  now += 500;
  assert.equal((await app.send(await signToken(rotated, claims(idp)))).status, 200, 'the issuer is back: the new key is fetched');
  assert.equal(idp.keySetFetches, 3);
});

test('with the issuer down from the start, a JWT answers 503, a store token 200', async (t) => {
  const idp = await startKeySetServer(t);
  const key = await makeKey('ES256');
  idp.publish(key);
  idp.down = true;
  const app = await jwtApp(t, idp);
  const response = await app.send(await signToken(key, claims(idp)));
  assert.equal(response.status, 503);
  assert.ok(Number(response.headers.get('retry-after')) >= 1);
  assert.equal((await app.send(app.token)).status, 200);
});

test('a key set larger than the fetch limit is a failed fetch: 503, not a memory spent on it', async (t) => {
  const idp = await startKeySetServer(t);
  const key = await makeKey('ES256');
  idp.publish(key);
  idp.padding = FETCH_MAX_BYTES;
  const app = await jwtApp(t, idp, { jwtJwksUrl: idp.jwksUrl });
  const response = await app.send(await signToken(key, claims(idp)));
  assert.equal(response.status, 503);
  assert.equal(idp.keySetFetches, 1);
});

test('a discovery document naming another issuer is refused: its keys are never used', async (t) => {
  const idp = await startKeySetServer(t);
  const key = await makeKey('RS256');
  idp.publish(key);
  idp.discoveredIssuer = `${idp.issuer}/`;
  const app = await jwtApp(t, idp);
  const response = await app.send(await signToken(key, claims(idp)));
  assert.equal(response.status, 503);
  assert.equal(idp.discoveryFetches, 1);
  assert.equal(idp.keySetFetches, 0, 'the key set it names is not fetched');
});

test('JWT_JWKS_URL is fetched directly, without discovery', async (t) => {
  const idp = await startKeySetServer(t);
  const key = await makeKey('PS256');
  idp.publish(key);
  idp.discoveredIssuer = 'https://never.consulted.test';
  const app = await jwtApp(t, idp, { jwtJwksUrl: idp.jwksUrl });
  assert.equal((await app.send(await signToken(key, claims(idp)))).status, 200);
  assert.deepEqual([idp.discoveryFetches, idp.keySetFetches], [0, 1]);
});

test('JWT_JWKS_FILE is read instead of fetching, and read again when a token names a key it lacks', async (t) => {
  const idp = await startKeySetServer(t);
  const [first, second] = [await makeKey('ES256'), await makeKey('RS256')];
  const file = join(tempDir(t), 'jwks.json');
  writeFileSync(file, JSON.stringify({ keys: [first.jwk] }));
  let now = Date.now();
  const app = await jwtApp(t, idp, { jwtJwksFile: file, jwtJwksCooldownMs: 100 }, { now: () => now });
  assert.equal((await app.send(await signToken(first, claims(idp)))).status, 200);
  writeFileSync(file, JSON.stringify({ keys: [first.jwk, second.jwk] }));
  now += 100;
  assert.equal((await app.send(await signToken(second, claims(idp)))).status, 200);
  assert.deepEqual([idp.discoveryFetches, idp.keySetFetches], [0, 0], 'nothing fetched over the network');
});
