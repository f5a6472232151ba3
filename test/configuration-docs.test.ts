import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { flagOf, settings, shownDefault } from '../src/config/config.js';

const page = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');
/** The rows of the page's settings table: variable, flag and default, backticks removed. */
const rows = [...page.matchAll(/^\| `([A-Z_]+)` \| `(--[a-z-]+)` \| ([^|]+) \|/gm)].map(([, env, flag, shown]) => ({
  env: env!,
  flag: flag!,
  shown: shown!.trim().replace(/^`(.*)`$/, '$1'),
}));

test('docs/configuration.md lists every setting of src/config/ with its variable, flag and default, and nothing else', () => {
  const expected = Object.entries(settings).map(([name, setting]) => ({
    env: setting.env,
    flag: `--${flagOf(setting)}`,
    shown: shownDefault(name as keyof typeof settings),
  }));
  const byVariable = (a: { env: string }, b: { env: string }) => a.env.localeCompare(b.env);
  assert.deepEqual([...rows].sort(byVariable), expected.sort(byVariable));
});
