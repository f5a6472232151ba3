import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { test } from 'node:test';
import { contractAjv as ajv, openApiFile as document, rebase } from '../../helpers/openapi.js';
import { AUDIENCE, claims, jwtApp, makeKey, signToken, startKeySetServer } from '../../helpers/key-set-server.js';
import { MOST_CANDIDATE_KEYS } from '../../../src/tokens/jwt/jwt-verifier.js';

const INVALID_TOKEN = 'Bearer realm="plantstore", error="invalid_token"';
const INSUFFICIENT_SCOPE = 'Bearer realm="plantstore", error="insufficient_scope", scope="plants:write"';

const base64url = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

/** The refusals counted so far, by reason, as GET /metrics shows them. */
async function authFailures(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Object.fromEntries([...text.matchAll(/^plantstore_auth_failures_total\{reason="(\w+)"\} (\d+)$/gm)].map(([, reason, count]) => [reason!, Number(count)]));
}

/** The answer has the status and Error body the served document declares for POST /plants. */
async function assertDeclared(response: Response, status: number): Promise<{ error: number; message: string }> {
  assert.equal(response.status, status);
  const body = (await response.json()) as { error: number; message: string };
  const declared = document.paths['/plants'].post.responses[String(status)];
  assert.ok(declared, `the document declares ${status}`);
  const spec = declared.$ref ? document.components.responses[declared.$ref.split('/').at(-1)] : declared;
  const validate = ajv.compile(rebase(spec.content['application/json'].schema));
  assert.ok(validate(body), JSON.stringify(body));
  assert.equal(body.error, status);
  return body;
}

test('a JWT signed with each accepted algorithm creates a plant, beside the store tokens', async (t) => {
  const idp = await startKeySetServer(t);
  const keys = await Promise.all((['RS256', 'PS256', 'ES256', 'EdDSA'] as const).map((alg) => makeKey(alg)));
  idp.publish(...keys);
  const app = await jwtApp(t, idp);
  for (const key of keys) {
    const response = await app.send(await signToken(key, claims(idp)));
    assert.equal(response.status, 200, key.alg);
    assert.deepEqual(await response.json(), { name: 'Fern' });
  }
  const opaque = await app.send(app.token);
  assert.equal(opaque.status, 200, 'the store token still works');
  assert.equal(idp.keySetFetches, 1, 'one fetch served every key');
});

test('the scope is found in scope (a space-separated string) or scp (an array or a string), as an exact word', async (t) => {
  const idp = await startKeySetServer(t);
  const key = await makeKey('ES256');
  idp.publish(key);
  const app = await jwtApp(t, idp);
  const granted = [{ scope: 'plants:write' }, { scope: 'openid plants:write profile' }, { scope: undefined, scp: ['read', 'plants:write'] }, { scope: undefined, scp: 'read plants:write' }];
  for (const scope of granted) assert.equal((await app.send(await signToken(key, claims(idp, scope)))).status, 200, JSON.stringify(scope));

  const lacking = [{ scope: 'plants:read' }, { scope: 'plants:write:all' }, { scope: 'plants' }, { scope: undefined }, { scope: ['plants:write'] }, { scope: undefined, scp: ['plants:write read'] }];
  for (const scope of lacking) {
    const response = await app.send(await signToken(key, claims(idp, scope)));
    assert.equal(response.headers.get('www-authenticate'), INSUFFICIENT_SCOPE, JSON.stringify(scope));
    const body = await assertDeclared(response, 403);
    assert.equal(body.message, 'The bearer token is valid but does not grant the scope this request needs: plants:write');
  }
  assert.equal((await authFailures(app.url))['jwt_scope'], lacking.length);
  assert.equal(await app.store.listPlants({ limit: 100 }).then((plants) => plants.length), granted.length, 'nothing stored for a 403');
});

test('JWT_SCOPE names the scope asked for, and the challenge names it', async (t) => {
  const idp = await startKeySetServer(t);
  const key = await makeKey('RS256');
  idp.publish(key);
  const app = await jwtApp(t, idp, { jwtScope: 'garden.write' });
  assert.equal((await app.send(await signToken(key, claims(idp, { scope: 'garden.write' })))).status, 200);
  const refused = await app.send(await signToken(key, claims(idp)));
  assert.equal(refused.status, 403);
  assert.equal(refused.headers.get('www-authenticate'), 'Bearer realm="plantstore", error="insufficient_scope", scope="garden.write"');
});

test('aud may be an array holding the audience; typ may be JWT, at+jwt or absent', async (t) => {
  const idp = await startKeySetServer(t);
  const key = await makeKey('PS256');
  idp.publish(key);
  const app = await jwtApp(t, idp);
  assert.equal((await app.send(await signToken(key, claims(idp, { aud: ['https://other.test', AUDIENCE] })))).status, 200);
  for (const typ of ['JWT', 'at+jwt', 'application/at+jwt', undefined]) {
    assert.equal((await app.send(await signToken(key, claims(idp), { typ }))).status, 200, String(typ));
  }
  const idToken = await app.send(await signToken(key, claims(idp), { typ: 'dpop+jwt' }));
  assert.equal(idToken.status, 401);
});

test('every token that is not valid here answers 401 invalid_token, counted by reason, and nothing is stored', async (t) => {
  const idp = await startKeySetServer(t);
  const key = await makeKey('RS256');
  const stranger = await makeKey('RS256');
  idp.publish(key);
  const app = await jwtApp(t, idp);
  const now = Math.floor(Date.now() / 1000);
  const valid = await signToken(key, claims(idp));
  const [header, payload, signature] = valid.split('.') as [string, string, string];

  const cases: [string, string, string][] = [
    ['expired', await signToken(key, claims(idp, { iat: now - 600, exp: now - 120 })), 'jwt_expired'],
    ['not yet valid (nbf)', await signToken(key, claims(idp, { nbf: now + 120 })), 'jwt_not_yet_valid'],
    ['issued in the future (iat)', await signToken(key, claims(idp, { iat: now + 120 })), 'jwt_not_yet_valid'],
    ['no exp', await signToken(key, claims(idp, { exp: undefined })), 'jwt_malformed'],
    ['wrong audience', await signToken(key, claims(idp, { aud: 'https://other.test' })), 'jwt_audience'],
    ['no audience', await signToken(key, claims(idp, { aud: undefined })), 'jwt_audience'],
    ['wrong issuer', await signToken(key, claims(idp, { iss: `${idp.issuer}/` })), 'jwt_issuer'],
    ['unknown key', await signToken(stranger, claims(idp)), 'jwt_unknown_key'],
    ['another key under a published kid', await signToken({ ...stranger, kid: key.kid }, claims(idp)), 'jwt_signature'],
    ['alg none', `${base64url({ alg: 'none', kid: key.kid })}.${payload}.`, 'jwt_algorithm'],
    ['HS256 signed with the public key PEM', hmacToken(key.pem, { alg: 'HS256', kid: key.kid, typ: 'JWT' }, claims(idp)), 'jwt_algorithm'],
    ['alg of another family under the key', `${base64url({ alg: 'ES256', kid: key.kid })}.${payload}.${signature}`, 'jwt_unknown_key'],
    ['changed payload', `${header}.${base64url({ ...claims(idp), sub: 'admin' })}.${signature}`, 'jwt_signature'],
    ['unknown crit', await signToken(key, claims(idp), { crit: ['x-plantstore-tier'], 'x-plantstore-tier': 'gold' }, { 'x-plantstore-tier': true }), 'jwt_unsupported'],
    ['garbage in three parts', 'abc.def.ghi', 'jwt_malformed'],
    ['a header that is not JSON', `${base64url('not json')}.${payload}.${signature}`, 'jwt_malformed'],
  ];
  const failuresBefore = await authFailures(app.url);
  for (const [name, token, reason] of cases) {
    const response = await app.send(token);
    assert.equal(response.headers.get('www-authenticate'), INVALID_TOKEN, name);
    const body = await assertDeclared(response, 401);
    assert.match(body.message, /^The bearer token is unknown, revoked or expired: /, name);
    assert.ok(!body.message.includes(token), 'the token is not echoed');
    const failures = await authFailures(app.url);
    assert.equal((failures[reason] ?? 0) - (failuresBefore[reason] ?? 0) > 0, true, `${name} counted as ${reason}`);
    Object.assign(failuresBefore, failures);
  }
  assert.deepEqual(await app.store.listPlants({ limit: 10 }), []);
  assert.equal((await app.send(valid)).status, 200, 'the untouched token passes');
});

test('a JWT longer than 8,192 characters is refused as an unknown token is, unchecked and unlooked-up, even a genuine one; one of at most 8,192 is checked', async (t) => {
  const idp = await startKeySetServer(t);
  const key = await makeKey('ES256');
  idp.publish(key);
  const app = await jwtApp(t, idp);
  // Genuine tokens made longer by a claim: the longest within the limit, and the next longer.
  const padded = (length: number) => signToken(key, claims(idp, { pad: 'x'.repeat(length) }));
  let [shortest, longest] = [0, 8192];
  while (shortest < longest) {
    const middle = Math.ceil((shortest + longest) / 2);
    if ((await padded(middle)).length <= 8192) shortest = middle;
    else longest = middle - 1;
  }
  const [within, beyond] = [await padded(shortest), await padded(shortest + 1)];
  assert.ok(within.length > 8185 && within.length <= 8192 && beyond.length > 8192, `${within.length} and ${beyond.length} characters`);

  assert.equal((await app.send(within)).status, 200);
  const refused = await app.send(beyond);
  assert.equal(refused.headers.get('www-authenticate'), INVALID_TOKEN);
  const body = await assertDeclared(refused, 401);
  assert.equal(body.message, 'The bearer token is unknown, revoked or expired', 'as an unknown store token: not read as a JWT');
  assert.deepEqual(await authFailures(app.url), { unknown: 1 });
  assert.doesNotMatch(await (await fetch(`${app.url}/metrics`)).text(), /^plantstore_token_lookups_total\{/m, 'nor looked up among the store tokens');
});

test('a key whose JWK names an algorithm is used with that algorithm only', async (t) => {
  const idp = await startKeySetServer(t);
  const key = await makeKey('PS256');
  // An RSA key published for RS256 only; the token is signed with it using PS256, the same family.
  idp.publish({ ...key, jwk: { ...key.jwk, alg: 'RS256' } });
  const app = await jwtApp(t, idp);
  const response = await app.send(await signToken(key, claims(idp)));
  assert.equal(response.status, 401);
  assert.equal((await authFailures(app.url))['jwt_unknown_key'], 1);
});

test(`a JWT without kid is tried with each key of its algorithm, up to ${MOST_CANDIDATE_KEYS}; a set with more is refused with the reason`, async (t) => {
  const idp = await startKeySetServer(t);
  const rsa = await Promise.all(Array.from({ length: MOST_CANDIDATE_KEYS + 1 }, () => makeKey('RS256')));
  const [ec, stranger] = [await makeKey('ES256'), await makeKey('RS256')];
  idp.publish(rsa[0]!, rsa[1]!, ec);
  let now = Date.now();
  const app = await jwtApp(t, idp, { jwtJwksCooldownMs: 100, jwtJwksMaxAgeMs: 1000 }, { now: () => now });
  const withoutKid = (key: (typeof rsa)[number], sub: string, overrides: Record<string, unknown> = {}) => signToken(key, claims(idp, { sub, ...overrides }), { kid: undefined });

  assert.equal((await app.send(await withoutKid(rsa[1]!, 'second'))).status, 200, 'signed by the second of two RS256 keys');
  assert.equal((await app.send(await withoutKid(rsa[0]!, 'first'))).status, 200, 'signed by the first');
  const failures = await authFailures(app.url);
  const expired = await withoutKid(rsa[1]!, 'late', { iat: Math.floor(now / 1000) - 600, exp: Math.floor(now / 1000) - 120 });
  assert.equal((await app.send(expired)).status, 401, "the claims are checked once a candidate's signature verifies");
  assert.equal((await authFailures(app.url))['jwt_expired'], (failures['jwt_expired'] ?? 0) + 1);
  const forged = await app.send(await withoutKid(stranger, 'forged'));
  assert.equal(forged.status, 401, 'a key of the set must verify it');
  assert.equal((await authFailures(app.url))['jwt_signature'], (failures['jwt_signature'] ?? 0) + 1);

  idp.publish(...rsa.slice(0, MOST_CANDIDATE_KEYS), ec);
  now += 1000;
  assert.equal((await app.send(await withoutKid(rsa[MOST_CANDIDATE_KEYS - 1]!, 'last'))).status, 200, `the last of ${MOST_CANDIDATE_KEYS} candidates`);

  idp.publish(...rsa, ec);
  now += 1000;
  for (const key of [rsa[0]!, rsa[MOST_CANDIDATE_KEYS]!]) {
    const refused = await app.send(await withoutKid(key, `one of too many ${key.kid}`));
    const body = await assertDeclared(refused, 401);
    assert.equal(
      body.message,
      `The bearer token is unknown, revoked or expired: more than ${MOST_CANDIDATE_KEYS} keys of the issuer fit the token's header, and at most ${MOST_CANDIDATE_KEYS} are tried: it needs a kid`,
    );
  }
  assert.equal((await app.send(await signToken(rsa[MOST_CANDIDATE_KEYS]!, claims(idp, { sub: 'named' })))).status, 200, 'with its kid, the same key is found');
  assert.equal((await app.send(await withoutKid(ec, 'elliptic'))).status, 200, 'the one ES256 key, found without a kid as before');
  assert.equal(idp.keySetFetches, 3);
});

test('the clock skew lets a token a little past its exp through, and JWT_CLOCK_SKEW_S sets it', async (t) => {
  const idp = await startKeySetServer(t);
  const key = await makeKey('ES256');
  idp.publish(key);
  const now = Math.floor(Date.now() / 1000);
  const justExpired = await signToken(key, claims(idp, { exp: now - 10 }));
  const lenient = await jwtApp(t, idp);
  assert.equal((await lenient.send(justExpired)).status, 200);
  const strict = await jwtApp(t, idp, { jwtClockSkewS: 0 });
  assert.equal((await strict.send(justExpired)).status, 401);
});

function hmacToken(secret: string, header: object, payload: object): string {
  const input = `${base64url(header)}.${base64url(payload)}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}
