import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { exportJWK, generateKeyPair } from 'jose';
import { sqlite } from '../helpers/backends.js';
import { AUDIENCE, claims, makeKey, signToken, startKeySetServer } from '../helpers/key-set-server.js';
import { createToken, postPlant, runCli, runInProcess, startServer } from '../helpers/processes.js';
import { tempDir } from '../helpers/temp-dir.js';
import { until } from '../helpers/until.js';

const LOOPBACK_ONLY = 'must be an https:// URL (http:// only on loopback: 127.0.0.0/8, ::1, localhost)';

test('every wrong JWT setting, alone or in combination, stops serve at start with one line that names it, exit 2', async (t) => {
  const dir = tempDir(t);
  const file = (name: string, content: unknown) => {
    const path = join(dir, name);
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  };
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const publicSet = file('public.json', { keys: [{ ...(await exportJWK((await generateKeyPair('ES256')).publicKey)), kid: 'a' }] });
  const privateSet = file('private.json', { keys: [await exportJWK(privateKey)] });
  const issuer = { JWT_ISSUER: 'https://idp.example.com/realms/plants', JWT_AUDIENCE: 'plantstore' };
  const cases: [Record<string, string>, string[], string][] = [
    [{ JWT_ISSUER: 'http://idp.example.com/realms/plants', JWT_AUDIENCE: 'x' }, [], `JWT_ISSUER ${LOOPBACK_ONLY}, got "http://idp.example.com/realms/plants"`],
    [{ JWT_AUDIENCE: 'x' }, ['--jwt-issuer', 'http://10.0.0.7/'], `--jwt-issuer ${LOOPBACK_ONLY}, got "http://10.0.0.7/"`],
    [{ JWT_ISSUER: 'idp.example.com', JWT_AUDIENCE: 'x' }, [], 'JWT_ISSUER must be an https:// URL, got "idp.example.com"'],
    [{ JWT_ISSUER: 'ftp://127.0.0.1/x', JWT_AUDIENCE: 'x' }, [], `JWT_ISSUER ${LOOPBACK_ONLY}, got "ftp://127.0.0.1/x"`],
    [{ JWT_ISSUER: 'https://idp.example.com/?realm=plants', JWT_AUDIENCE: 'x' }, [], 'JWT_ISSUER must be a URL without credentials, query or fragment, got "https://idp.example.com/?realm=plants"'],
    [{ JWT_ISSUER: 'https://idp.example.com' }, [], 'JWT_AUDIENCE is required with JWT_ISSUER: the audience the identity provider puts in tokens for this service'],
    [{ JWT_AUDIENCE: 'plantstore' }, [], 'JWT_AUDIENCE is set but JWT_ISSUER is not; set JWT_ISSUER to accept JWTs, or unset JWT_AUDIENCE'],
    [{ JWT_SCOPE: 'plants:write' }, [], 'JWT_SCOPE is set but JWT_ISSUER is not; set JWT_ISSUER to accept JWTs, or unset JWT_SCOPE'],
    [{}, ['--jwt-jwks-cooldown-ms', '1000'], 'JWT_JWKS_COOLDOWN_MS is set but JWT_ISSUER is not; set JWT_ISSUER to accept JWTs, or unset JWT_JWKS_COOLDOWN_MS'],
    [{ ...issuer, JWT_AUDIENCE: 'two words' }, [], 'JWT_AUDIENCE must be an audience without spaces, got "two words"'],
    [{ ...issuer, JWT_SCOPE: 'plants:write plants:read' }, [], 'JWT_SCOPE must be one scope without spaces, got "plants:write plants:read"'],
    [{ ...issuer, JWT_JWKS_URL: 'http://keys.example.com/jwks' }, [], `JWT_JWKS_URL ${LOOPBACK_ONLY}, got "http://keys.example.com/jwks"`],
    [{ ...issuer, JWT_JWKS_URL: 'https://idp.example.com/jwks', JWT_JWKS_FILE: publicSet }, [], "JWT_JWKS_FILE and JWT_JWKS_URL exclude each other: set one, or neither to use the issuer's discovery document"],
    [{ ...issuer, JWT_JWKS_FILE: join(dir, 'missing.json') }, [], `JWT_JWKS_FILE must be a readable JSON file: ENOENT: no such file or directory, open '${join(dir, 'missing.json')}'`],
    [{ ...issuer, JWT_JWKS_FILE: file('text.json', 'keys') }, [], `JWT_JWKS_FILE must be a readable JSON file: Unexpected token 'k', "keys" is not valid JSON`],
    [{ ...issuer, JWT_JWKS_FILE: file('not-a-set.json', { keys: 'none' }) }, [], 'JWT_JWKS_FILE must hold a JSON Web Key Set: a JSON object with a "keys" array'],
    [{ ...issuer, JWT_JWKS_FILE: privateSet }, [], 'JWT_JWKS_FILE must hold a JSON Web Key Set: key 0 holds private or secret material ("d"); publish public keys only'],
    [{ ...issuer, JWT_CLOCK_SKEW_S: 'half a minute' }, [], 'JWT_CLOCK_SKEW_S must be a whole number from 0 to 600, got "half a minute"'],
    [{ ...issuer, JWT_JWKS_COOLDOWN_MS: '50' }, [], 'JWT_JWKS_COOLDOWN_MS must be a whole number from 100 to 3600000, got "50"'],
    [{ ...issuer, JWT_JWKS_MAX_AGE_MS: '10000' }, [], 'JWT_JWKS_MAX_AGE_MS must be at least JWT_JWKS_COOLDOWN_MS (30000), got 10000'],
  ];
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  for (const [vars, args, line] of cases) {
    // In this process: each stops at its settings, before serve starts anything.
    const result = await runInProcess(['serve', ...args], { ...env, ...vars });
    assert.equal(result.stderr, `plantstore: ${line}\n`, JSON.stringify(vars));
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '', 'stopped before starting');
  }
});

test('loopback issuers may be plain http; plantstore config and serve --help list every JWT setting', async () => {
  for (const loopback of ['http://127.0.0.1:8443/realms/a', 'http://127.9.9.9/', 'http://localhost:3000', 'http://[::1]:8080/x', 'https://idp.example.com/']) {
    const shown = await runInProcess(['config'], { JWT_ISSUER: loopback, JWT_AUDIENCE: 'plantstore' });
    assert.equal(shown.code, 0, shown.stderr);
    assert.ok(shown.stdout.includes(`\nJWT_ISSUER=${loopback}\n`));
  }
  const defaults = JSON.parse((await runInProcess(['config', '--json'])).stdout) as Record<string, string>;
  assert.deepEqual(
    Object.fromEntries(Object.entries(defaults).filter(([name]) => name.startsWith('JWT_'))),
    {
      JWT_ISSUER: '',
      JWT_AUDIENCE: '',
      JWT_JWKS_URL: '',
      JWT_JWKS_FILE: '',
      JWT_SCOPE: 'plants:write',
      JWT_CLOCK_SKEW_S: '30',
      JWT_JWKS_COOLDOWN_MS: '30000',
      JWT_JWKS_MAX_AGE_MS: '600000',
    },
  );
  const help = (await runCli(['serve', '--help'])).stdout;
  for (const flag of ['jwt-issuer', 'jwt-audience', 'jwt-jwks-url', 'jwt-jwks-file', 'jwt-scope', 'jwt-clock-skew-s', 'jwt-jwks-cooldown-ms', 'jwt-jwks-max-age-ms']) {
    // A long meaning goes on, in its column, on the lines below.
    assert.match(help, new RegExp(`^  --${flag} +${flag.toUpperCase().replaceAll('-', '_')} [^\\n]*(?:\\n {4,}[^\\n]*)*\\(default: `, 'm'), flag);
  }
});

test('a discovery document that names another issuer stops serve at start, exit 2, with one line naming JWT_ISSUER', async (t) => {
  const idp = await startKeySetServer(t);
  idp.publish(await makeKey('RS256'));
  idp.discoveredIssuer = `${idp.issuer}/`;
  const env = { DATABASE_URL: await sqlite.freshUrl(t), JWT_ISSUER: idp.issuer, JWT_AUDIENCE: AUDIENCE, PORT: '0' };
  const expected =
    `plantstore: JWT_ISSUER does not match the identity provider: the discovery document ${idp.issuer}/.well-known/openid-configuration ` +
    `names the issuer "${idp.issuer}/", not "${idp.issuer}"\n`;
  const single = await runCli(['serve'], env);
  assert.equal(single.code, 2);
  assert.equal(single.stderr, expected);
  const workers = await runCli(['serve', '--workers', '2'], env);
  assert.equal(workers.code, 2, 'the primary exits as its workers did');
  assert.equal(idp.keySetFetches, 0);
});

test('a server whose issuer is down at start still serves: store tokens work, JWTs answer 503 until the keys can be had', async (t) => {
  const idp = await startKeySetServer(t);
  const key = await makeKey('ES256');
  idp.publish(key);
  idp.down = true;
  const env = { DATABASE_URL: await sqlite.freshUrl(t), JWT_ISSUER: idp.issuer, JWT_AUDIENCE: AUDIENCE, JWT_JWKS_COOLDOWN_MS: '100', JWT_JWKS_MAX_AGE_MS: '100' };
  const token = await createToken(env, 'opaque');
  const server = await startServer(t, env);
  const fetchWarning = server.logs.find((line) => line['msg'] === 'cannot fetch the identity provider keys');
  assert.equal(fetchWarning?.['level'], 40);
  assert.equal((await postPlant(server.url, token, '{"id":1,"name":"a"}')).status, 200);
  const jwt = await signToken(key, claims(idp));
  assert.equal((await postPlant(server.url, jwt, '{"id":2,"name":"b"}')).status, 503);
  idp.down = false;
  // The cooldown after the failed fetches is 100 ms; then the keys are fetched and the same token passes.
  await until('the JWT is accepted once the issuer is back', async () => (await postPlant(server.url, jwt, '{"id":2,"name":"b"}')).status === 200, 5000);
  assert.equal(await server.stop(), 0);
});

test('logs at trace level name a JWT by its subject and issuer and a store token by its name, and never hold a token', async (t) => {
  const idp = await startKeySetServer(t);
  const [key, stranger] = [await makeKey('RS256'), await makeKey('RS256')];
  idp.publish(key);
  const env = { DATABASE_URL: await sqlite.freshUrl(t), LOG_LEVEL: 'trace', JWT_ISSUER: idp.issuer, JWT_AUDIENCE: AUDIENCE };
  const opaque = await createToken(env, 'logged');
  const server = await startServer(t, env);
  const now = Math.floor(Date.now() / 1000);
  const tokens = {
    valid: await signToken(key, claims(idp, { sub: 'alice' })),
    expired: await signToken(key, claims(idp, { sub: 'bob', iat: now - 600, exp: now - 300 })),
    noScope: await signToken(key, claims(idp, { sub: 'carol', scope: 'plants:read' })),
    forged: await signToken({ ...stranger, kid: key.kid }, claims(idp, { sub: 'mallory' })),
    opaque,
  };
  const statuses: number[] = [];
  for (const [index, token] of Object.values(tokens).entries()) statuses.push((await postPlant(server.url, token, `{"id":${index},"name":"x"}`)).status);
  assert.deepEqual(statuses, [200, 401, 403, 401, 200]);
  assert.equal(await server.stop(), 0);

  const text = server.logs.map((line) => JSON.stringify(line)).join('\n');
  for (const token of Object.values(tokens)) {
    for (const part of token.split('.')) assert.ok(!text.includes(part), 'no token, nor any part of one, in any log line');
  }
  const access = server.logs.filter((line) => line['msg'] === 'request').map((line) => [line['status'], line['token'], line['sub'], line['iss']]);
  assert.deepEqual(access, [
    [200, undefined, 'alice', idp.issuer],
    [401, undefined, undefined, undefined],
    [403, undefined, undefined, undefined],
    [401, undefined, undefined, undefined],
    [200, 'logged', undefined, undefined],
  ]);
  const refused = server.logs.filter((line) => line['msg'] === 'bearer token refused').map((line) => [line['reason'], line['sub'], line['iss']]);
  assert.deepEqual(refused, [
    ['jwt_expired', 'bob', idp.issuer],
    ['jwt_scope', 'carol', idp.issuer],
    ['jwt_signature', undefined, undefined],
  ]);
  assert.ok(server.logs.some((line) => line['msg'] === 'identity provider keys fetched' && line['keys'] === 1), 'the keys are fetched at start');
});
