import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { testApp } from '../helpers/test-app.js';

const scalarVersion = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { devDependencies: Record<string, string> })
  .devDependencies['@scalar/fastify-api-reference'];
const page = '/docs';
const script = `/docs/${scalarVersion}/scalar.js`;

test('GET /docs needs no token, loads the script of the pinned Scalar from this server, turns off every feature that reaches Scalar, and lets the browser reach this server only', async (t) => {
  assert.match(String(scalarVersion), /^\d+\.\d+\.\d+$/, 'pinned exactly');
  const { app } = await testApp(t, { docs: true });
  const answer = await app.inject({ method: 'GET', url: page });
  assert.equal(answer.statusCode, 200);
  assert.ok(answer.body.includes(`<script src="${script}"></script>`), answer.body);
  assert.match(String(answer.headers['content-type']), /^text\/html/);
  assert.equal(answer.headers['cache-control'], 'no-store');
  const csp = String(answer.headers['content-security-policy']);
  for (const directive of ["default-src 'self'", "connect-src 'self'", "font-src 'self' data:", "frame-ancestors 'none'"]) {
    assert.ok(csp.includes(directive), directive);
  }
  assert.equal(answer.headers['referrer-policy'], 'no-referrer');

  const html = answer.body;
  assert.ok(!/https?:\/\//.test(html), 'no address elsewhere in the page');
  const configuration = JSON.parse(/createApiReference\('#app', (\{[\s\S]*?\})\)/.exec(html)![1]!) as Record<string, unknown>;
  assert.deepEqual(
    {
      url: configuration['url'],
      withDefaultFonts: configuration['withDefaultFonts'],
      agent: configuration['agent'],
      mcp: configuration['mcp'],
      showDeveloperTools: configuration['showDeveloperTools'],
      hideClientButton: configuration['hideClientButton'],
      telemetry: configuration['telemetry'],
      persistAuth: configuration['persistAuth'],
    },
    {
      url: '/openapi.json',
      withDefaultFonts: false,
      agent: { disabled: true },
      mcp: { disabled: true },
      showDeveloperTools: 'never',
      hideClientButton: true,
      telemetry: false,
      persistAuth: false,
    },
  );
});

test('the script is cached for a year under its versioned path', async (t) => {
  const { app } = await testApp(t, { docs: true });
  const answer = await app.inject({ method: 'GET', url: script });
  assert.equal(answer.statusCode, 200);
  assert.match(String(answer.headers['content-type']), /^application\/javascript/);
  assert.equal(answer.headers['cache-control'], 'public, max-age=31536000, immutable');
  assert.ok(answer.rawPayload.length > 1_000_000, 'the whole reference, from the package');
  assert.equal(Number(answer.headers['content-length']), answer.rawPayload.length);
  assert.equal(answer.headers['x-content-type-options'], 'nosniff');
});

test('other methods on the reference answer 405 with Allow', async (t) => {
  const { app } = await testApp(t, { docs: true });
  for (const url of [page, script]) {
    const answer = await app.inject({ method: 'POST', url, payload: {} });
    assert.equal(answer.statusCode, 405, url);
    assert.equal(answer.headers['allow'], 'GET, HEAD');
  }
});

test('the reference adds nothing to the other answers', async (t) => {
  const { post, app } = await testApp(t, { docs: true });
  for (const answer of [await post({ id: 1, name: 'Fern' }), await app.inject({ method: 'GET', url: '/openapi.json' })]) {
    assert.equal(answer.headers['content-security-policy'], undefined);
    assert.equal(answer.headers['cache-control'], 'no-store');
  }
});

test('DOCS=off: no reference, no script', async (t) => {
  const { app } = await testApp(t, { docs: false });
  for (const url of [page, script]) {
    const answer = await app.inject({ method: 'GET', url });
    assert.equal(answer.statusCode, 404, url);
  }
});

test('GET /openapi.json keeps every digit of the example id beyond 2^53', async (t) => {
  const { app } = await testApp(t);
  const answer = await app.inject({ method: 'GET', url: '/openapi.json' });
  assert.ok(answer.body.includes('"id":9007199254740993'), 'the example id as written');
});
