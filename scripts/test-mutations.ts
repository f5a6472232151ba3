// npm run test:mutations [-- --only NAME,NAME]: applies each deliberate bug of test/mutations/mutations.ts to
// a scratch copy of the project, rebuilds it, and runs the tests that guard its promise. A mutation the tests
// let pass has survived: the run fails and names it. The copy shares node_modules; the checkout is never touched.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type Mutation, MUTATIONS } from '../test/mutations/mutations.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({ options: { only: { type: 'string' } } });
const only = values.only?.split(',');
const unknown = only?.filter((name) => !MUTATIONS.some((mutation) => mutation.name === name)) ?? [];
if (unknown.length > 0) throw new Error(`no mutation named ${unknown.join(', ')}`);
const chosen = MUTATIONS.filter((mutation) => only === undefined || only.includes(mutation.name));

/** A copy of what a build and the tests read, beside the checkout's node_modules. */
function scratchCopy(): string {
  const scratch = mkdtempSync(join(tmpdir(), 'plantstore-mutations-'));
  for (const entry of ['bin', 'src', 'test', 'bench', 'openapi', 'scripts', 'deploy', 'docs', 'packages', 'package.json', 'tsconfig.json', 'tsconfig.build.json', 'README.md', 'CHANGELOG.md']) {
    cpSync(join(ROOT, entry), join(scratch, entry), { recursive: true, filter: (source) => !source.includes('node_modules') });
  }
  symlinkSync(join(ROOT, 'node_modules'), join(scratch, 'node_modules'));
  return scratch;
}

/** The longest a mutation's tests may run; the slowest take about a minute. */
const MUTATION_RUN_LIMIT_MS = 300_000;

function run(command: string, args: readonly string[], cwd: string, timeoutMs?: number): { ok: boolean; timedOut: boolean; output: string } {
  const result = spawnSync(command, args, {
    cwd,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, FORCE_COLOR: '0' },
    ...(timeoutMs === undefined ? {} : { timeout: timeoutMs, killSignal: 'SIGKILL' as const }),
  });
  return { ok: result.status === 0, timedOut: result.error !== undefined && 'code' in result.error && result.error.code === 'ETIMEDOUT', output: `${result.stdout}${result.stderr}` };
}

/** Builds the copy: its TypeScript (a mutation may leave a name unused), then the docs page, as npm run build does. */
function build(scratch: string, withDocs: boolean): void {
  const compiled = run(process.execPath, ['node_modules/typescript-native/bin/tsc', '-p', 'tsconfig.build.json', '--noUnusedLocals', 'false', '--noUnusedParameters', 'false'], scratch);
  if (!compiled.ok) throw new Error(`the build failed:\n${compiled.output}`);
  if (withDocs && !run(process.execPath, ['scripts/docs-assets.mjs'], scratch).ok) throw new Error('the docs assets were not built');
}

/** Applies `mutation`, rebuilds, runs its tests, and puts the file back: whether the tests failed (the mutation was caught). */
function tryMutation(scratch: string, mutation: Mutation): { caught: boolean; seconds: number; failed: string[] } {
  const path = join(scratch, mutation.file);
  const original = readFileSync(path, 'utf8');
  const occurrences = original.split(mutation.from).length - 1;
  if (occurrences !== 1) throw new Error(`${mutation.name}: ${mutation.file} holds its text ${occurrences} times, not once: the list is out of date`);
  const started = performance.now();
  writeFileSync(path, original.replace(mutation.from, mutation.to));
  try {
    build(scratch, false);
    const pattern = mutation.pattern === undefined ? [] : ['--test-name-pattern', mutation.pattern];
    const tested = run(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-reporter=tap', ...pattern, ...mutation.tests], scratch, MUTATION_RUN_LIMIT_MS);
    // A run that had to be ended caught nothing for certain: its tests hung, which a test must not.
    if (tested.timedOut) return { caught: false, seconds: (performance.now() - started) / 1000, failed: [`the tests did not end within ${MUTATION_RUN_LIMIT_MS / 1000} s`] };
    const failed = [...tested.output.matchAll(/^not ok \d+ - (.*)$/gm)].map((match) => match[1]!);
    return { caught: !tested.ok, seconds: (performance.now() - started) / 1000, failed };
  } finally {
    writeFileSync(path, original);
  }
}

const scratch = scratchCopy();
const rows: string[] = [];
let survivors = 0;
try {
  build(scratch, true);
  for (const mutation of chosen) {
    process.stderr.write(`${mutation.name}: ${mutation.promise}\n`);
    const { caught, seconds, failed } = tryMutation(scratch, mutation);
    if (!caught) survivors += 1;
    process.stderr.write(`  ${caught ? `caught in ${seconds.toFixed(0)} s by: ${failed.slice(0, 3).join(' | ')}` : `SURVIVED: ${failed[0] ?? 'every test passed'}`}\n`);
    rows.push(`| ${mutation.name} | ${caught ? 'caught' : '**survived**'} | ${seconds.toFixed(0)} s | ${mutation.tests.join(', ')}${mutation.pattern === undefined ? '' : ` (${mutation.pattern})`} |`);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
process.stdout.write(`\n| mutation | outcome | time | tests |\n|---|---|---|---|\n${rows.join('\n')}\n\n${chosen.length - survivors} of ${chosen.length} caught\n`);
process.exitCode = survivors === 0 ? 0 : 1;
