import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { test } from 'node:test';
import { FETCH_TIMEOUT_MS } from '../../../src/tokens/jwt/key-set-source.js';
import { claims, jwtApp, makeKey, signToken, startKeySetServer } from '../../helpers/key-set-server.js';
import { until, within } from '../../helpers/until.js';

/** Past one fetch timeout, what an answer may take: the service's own work, on a busy machine. */
const MARGIN_MS = 1000;

/** `send` resolved, with how long it took by the monotonic clock. */
async function timed(send: Promise<Response>): Promise<{ response: Response; ms: number }> {
  const started = performance.now();
  const response = await within('the service answers', send, 3 * FETCH_TIMEOUT_MS);
  return { response, ms: performance.now() - started };
}

test('a provider that never answers holds a token with an unknown kid up for one fetch timeout, shared by the requests that arrive meanwhile', async (t) => {
  const idp = await startKeySetServer(t);
  const [cached, rotated] = [await makeKey('ES256'), await makeKey('ES256')];
  idp.publish(cached);
  let aheadMs = 0;
  const app = await jwtApp(t, idp, { jwtJwksCooldownMs: 100, jwtJwksMaxAgeMs: 1000 }, { now: () => Date.now() + aheadMs });
  assert.equal((await app.send(await signToken(cached, claims(idp)))).status, 200);
  assert.deepEqual([idp.discoveryFetches, idp.keySetFetches], [1, 1]);

  idp.delayMs = Infinity;
  // The set is past its age and the cooldown is short: the request fetches for the age, and its kid is still unknown after.
  aheadMs += 1000;
  const tokens = [await signToken(rotated, claims(idp)), await signToken(rotated, claims(idp, { sub: 'second' }))];
  const first = timed(app.send(tokens[0]!));
  await until('the fetch is under way', () => idp.keySetFetches === 2);
  const second = timed(app.send(tokens[1]!));
  const answers = await Promise.all([first, second]);

  for (const { response, ms } of answers) {
    assert.equal(response.status, 503);
    assert.equal((await response.json() as { code: string }).code, 'IDP_UNAVAILABLE');
    assert.ok(ms < FETCH_TIMEOUT_MS + MARGIN_MS, `answered in ${Math.round(ms)} ms, within one fetch timeout (${FETCH_TIMEOUT_MS} ms)`);
  }
  assert.ok(answers[1]!.ms < answers[0]!.ms, 'the second request waited for the fetch the first started, not for one of its own');
  assert.deepEqual([idp.discoveryFetches, idp.keySetFetches], [1, 2], 'one fetch for both requests, and no second one after it');
});

test('a slow discovery document and a slow key set share one fetch timeout', async (t) => {
  const idp = await startKeySetServer(t);
  const key = await makeKey('RS256');
  idp.publish(key);
  // Each answer alone is within the timeout; the two together are not.
  idp.delayMs = 0.8 * FETCH_TIMEOUT_MS;
  const app = await jwtApp(t, idp, { jwtJwksCooldownMs: 100 });
  const { response, ms } = await timed(app.send(await signToken(key, claims(idp))));
  assert.equal(response.status, 503);
  assert.ok(ms < FETCH_TIMEOUT_MS + MARGIN_MS, `answered in ${Math.round(ms)} ms, within one fetch timeout (${FETCH_TIMEOUT_MS} ms)`);
  assert.deepEqual([idp.discoveryFetches, idp.keySetFetches], [1, 1], 'the key set was asked for, after the discovery document, in the same budget');

  idp.delayMs = 0;
  assert.equal((await app.send(await signToken(key, claims(idp)))).status, 200, 'the provider answering in time again, the same token passes');
});
