import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError, loadServeConfig } from '../../src/config/config.js';
import { runCli } from '../helpers/processes.js';
import { tempDir } from '../helpers/temp-dir.js';

const load = (token: string) => loadServeConfig({ env: { METRICS_TOKEN: token }, flags: {} }).metricsToken;

test('METRICS_TOKEN is at least 16 characters of a bearer token; a refusal names the variable, never the value', () => {
  assert.equal(load('scrape-me-0123456'), 'scrape-me-0123456');
  assert.equal(load('  c2NyYXBlLW1lLXBsZWFzZQ==  '), 'c2NyYXBlLW1lLXBsZWFzZQ==');
  for (const [token, why] of [
    ['short-secret-15', /^METRICS_TOKEN must be at least 16 characters long$/],
    ['x', /^METRICS_TOKEN must be at least 16 characters long$/],
    ['has spaces in the middle', /^METRICS_TOKEN must be a bearer token/],
    ['bang!0123456789abcdef', /^METRICS_TOKEN must be a bearer token/],
  ] as const) {
    assert.throws(
      () => load(token),
      (error: unknown) => error instanceof ConfigError && why.test(error.message) && !error.message.includes(token),
      token,
    );
  }
});

test('plantstore serve refuses a short METRICS_TOKEN at start: exit code 2, one line without the value', async (t) => {
  const env = { METRICS_TOKEN: 'short-secret-15', DATABASE_URL: `sqlite:${join(tempDir(t), 'plantstore.db')}` };
  const refused = await runCli(['serve', '--port', '0'], env);
  assert.equal(refused.code, 2);
  assert.equal(refused.stderr, 'plantstore: METRICS_TOKEN must be at least 16 characters long\n');
  assert.equal(refused.stdout, '');
});
