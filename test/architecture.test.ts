import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));
/** Made by `npm run openapi:generate`, not by hand. */
const GENERATED = /^contract\/generated\//;
const MOST_LINES = 400;

/** Every source file under src/, by its path from there. */
function sourceFiles(folder = SRC): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [relative(SRC, path)] : [];
  });
}

/** What a file imports, `import type` and re-exports included: other files of src/ by their path from src/, packages by name. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(SRC, file), 'utf8');
  return [...text.matchAll(/^(?:import|export)\s[^;]*?\sfrom\s+'([^']+)'/gms)].map(([, specifier]) =>
    specifier!.startsWith('.') ? relative(SRC, resolve(SRC, dirname(file), specifier!.replace(/\.js$/, '.ts'))) : specifier!,
  );
}

const files = sourceFiles();
const graph = new Map(files.map((file) => [file, importsOf(file)]));

test('no hand-written source file is over 400 lines', () => {
  const long = files
    .filter((file) => !GENERATED.test(file))
    .map((file) => ({ file, lines: readFileSync(join(SRC, file), 'utf8').split('\n').length - 1 }))
    .filter(({ lines }) => lines > MOST_LINES);
  assert.deepEqual(long, []);
});

test('no import cycle', () => {
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    path.push(file);
    for (const imported of graph.get(file) ?? []) {
      if (state.get(imported) === 'open') cycles.push([...path.slice(path.indexOf(imported)), imported].join(' -> '));
      else if (!state.has(imported) && graph.has(imported)) visit(imported);
    }
    path.pop();
    state.set(file, 'done');
  };
  for (const file of files) if (!state.has(file)) visit(file);
  assert.deepEqual(cycles, []);
});

/** Which layers each layer must not import: the domain and the stores know nothing of HTTP or the commands. */
const FORBIDDEN: [RegExp, RegExp, string][] = [
  [/^plants\//, /^(http|cli|store|webhooks)\/|^app\.ts$/, 'the domain defines interfaces that the rest implements'],
  [/^store\//, /^(http|cli)\/|^app\.ts$/, 'a store serves every caller alike'],
  [/^contract\//, /^(http|cli|plants|store|tokens|webhooks)\/|^app\.ts$/, 'the contract is neutral: every layer may use it'],
  [/^http\/[^/]+\.ts$|^http\/(server|fast-path)\//, /^fastify$/, 'the create pipeline, the server under both adapters and the fast path have no Fastify in them'],
];

test('imports run one way: nothing in plants/ or store/ imports http/, cli/ or app.ts, and the pipeline is framework-free', () => {
  const wrong: string[] = [];
  for (const [file, imports] of graph) {
    for (const [from, to, why] of FORBIDDEN) {
      if (!from.test(file)) continue;
      for (const imported of imports.filter((target) => to.test(target))) wrong.push(`${file} imports ${imported}: ${why}`);
    }
  }
  assert.deepEqual(wrong, []);
});
