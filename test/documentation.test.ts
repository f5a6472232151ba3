import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const pages = ['README.md', 'SECURITY.md', 'packages/client/README.md', ...readdirSync(join(ROOT, 'docs')).map((page) => `docs/${page}`)];
const text = (page: string) => readFileSync(join(ROOT, page), 'utf8');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchor = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replaceAll(' ', '-');
const anchorsOf = (page: string) => new Set([...text(page).matchAll(/^#+ (.+)$/gm)].map(([, heading]) => anchor(heading!)));

test('the README is a front door of at most 16,000 characters', () => {
  const length = [...text('README.md')].length;
  assert.ok(length <= 16_000, `${length} characters`);
});

test('every page of docs/ opens, after its title, with who it is for', () => {
  for (const page of pages.filter((page) => page.startsWith('docs/'))) {
    const [title, opening] = text(page).split('\n\n');
    assert.match(title!, /^# /, page);
    assert.match(opening!, /^For /, page);
  }
});

test('every link between the pages leads to a file that exists, and to a heading of it', () => {
  for (const page of pages) {
    for (const [, target] of text(page).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^(https?|mailto):/.test(target!)) continue;
      const [path, hash] = target!.split('#') as [string, string | undefined];
      const file = path === '' ? page : join(dirname(page), path);
      assert.ok(existsSync(resolve(ROOT, file)), `${page}: ${target} (no ${file})`);
      if (hash !== undefined) assert.ok(anchorsOf(file).has(hash), `${page}: ${target} (no such heading in ${file})`);
    }
  }
});
