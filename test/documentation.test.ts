import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { headingAnchors } from './helpers/markdown.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const pages = ['README.md', 'SECURITY.md', 'packages/client/README.md', ...readdirSync(join(ROOT, 'docs')).map((page) => `docs/${page}`)];
const text = (page: string) => readFileSync(join(ROOT, page), 'utf8');
/** A page's size as the limits count it: its bytes, so that a µ or an × counts for what it weighs. */
const size = (page: string) => Buffer.byteLength(text(page));

const anchorsOf = (page: string) => headingAnchors(text(page));

test('the README is a front door of at most 8,000 characters', () => {
  const length = size('README.md');
  assert.ok(length <= 8_000, `${length} characters`);
});

test('the pages of docs/ hold at most 70,000 characters in all, and none more than 20,000', () => {
  const lengths = pages.filter((page) => page.startsWith('docs/')).map((page) => [page, size(page)] as const);
  for (const [page, length] of lengths) assert.ok(length <= 20_000, `${page}: ${length} characters`);
  const total = lengths.reduce((sum, [, length]) => sum + length, 0);
  assert.ok(total <= 70_000, `${total} characters in all`);
});

test('the performance page holds at most 15,000 characters', () => {
  const length = size('docs/performance.md');
  assert.ok(length <= 15_000, `${length} characters`);
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
