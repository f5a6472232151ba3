import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Every .ts file under src/, from the root. */
function sources(folder = 'src'): string[] {
  return readdirSync(join(ROOT, folder), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(folder, entry.name)) : entry.name.endsWith('.ts') ? [join(folder, entry.name)] : [],
  );
}

/** The comments of a file: its `//` lines and the lines of its `/* … *\/` blocks. */
function comments(text: string): string[] {
  const found: string[] = [];
  let inBlock = false;
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (inBlock || trimmed.startsWith('/*')) {
      found.push(trimmed);
      inBlock = !trimmed.includes('*/');
    } else if (trimmed.startsWith('//')) {
      found.push(trimmed);
    }
  }
  return found;
}

/** A file a comment names: a path with a folder and an extension the project has. */
const PATH = /(?<![\w@./-])(?:\.\.?\/)*(?:[\w-]+\/)+[\w.-]+\.(?:ts|mjs|js|md|yaml|json|py|sh|conf|service|yml)\b/g;

/** `folder` and each folder above it, up to src/. */
function ancestors(folder: string): string[] {
  return folder === '.' || folder === '' ? [] : [folder, ...ancestors(dirname(folder))];
}

/** Node.js's own source, as `lib/net.js` names node:net's. */
function isNodeSource(path: string): boolean {
  const module = /^lib\/([\w/]+)\.js$/.exec(path)?.[1];
  return module !== undefined && builtinModules.includes(module);
}

test('every file a comment in src/ names exists', () => {
  const missing: string[] = [];
  for (const file of sources()) {
    for (const comment of comments(readFileSync(join(ROOT, file), 'utf8'))) {
      for (const [path] of comment.matchAll(PATH)) {
        if (isNodeSource(path)) continue;
        // From the root, a folder above the file, or a package; a .js import path names its .ts source.
        const folders = ['', 'node_modules', ...ancestors(dirname(file))];
        const candidates = folders.flatMap((folder) => [join(folder, path), join(folder, path.replace(/\.js$/, '.ts'))]);
        if (!candidates.some((at) => existsSync(join(ROOT, at)))) missing.push(`${file}: ${path}`);
      }
    }
  }
  assert.deepEqual(missing, []);
});
