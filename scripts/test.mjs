// npm test / npm run test:system: runs a tier's test files with node:test, several files at once, then
// the files that say they run alone (a line starting `// Runs alone:` with the reason), one at a time.
//   node scripts/test.mjs [--tier fast|system] [FILE ...]
// PLANTSTORE_TEST_CONCURRENCY sets how many files run at once (default: one more than the cores: files wait on servers and child processes).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The harnesses that build whole systems (replicated PostgreSQL, a fleet, a browser, a power cut, long loads). */
const SYSTEM = 'test/system';
/** Generous: the longest test file of the system tier takes about two minutes; a hang still ends. */
const TEST_TIMEOUT_MS = 240_000;

const { values, positionals } = parseArgs({ options: { tier: { type: 'string', default: 'fast' } }, allowPositionals: true });
if (values.tier !== 'fast' && values.tier !== 'system') throw new Error(`--tier is fast or system, not ${values.tier}`);

function testFiles(folder) {
  return readdirSync(join(ROOT, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.test.ts'))
    .map((entry) => relative(ROOT, join(entry.parentPath ?? entry.path, entry.name)))
    .sort();
}

const files =
  positionals.length > 0
    ? positionals
    : values.tier === 'system'
      ? testFiles(SYSTEM)
      : [...testFiles('test'), ...testFiles('packages/client/test')].filter((file) => !file.startsWith(`${SYSTEM}/`));
/**
 * The files that take longest start first, so that a run does not end on one of them alone. The
 * runner's last lines list the slowest files of each run: keep this in step with them.
 */
const START_FIRST = [
  'test/webhooks/crash-and-processes.test.ts',
  'test/webhooks/retries.test.ts',
  'test/cli/start-failures.test.ts',
  'test/cli/serve-command.test.ts',
  'test/webhooks/pruning-and-latency.test.ts',
  'test/cli/missing-store.test.ts',
  'test/webhooks/delivery-promises.test.ts',
  'test/store/sqlite-driver.test.ts',
  'test/tracing/traces.test.ts',
  'test/system/postgres-failover.test.ts',
  'test/system/crash-recovery.test.ts',
  'test/system/token-flood-memory.test.ts',
  'test/system/webhook-crashes.test.ts',
];
const rank = (file) => (START_FIRST.includes(file) ? START_FIRST.indexOf(file) : START_FIRST.length);
files.sort((a, b) => rank(a) - rank(b));
const runsAlone = (file) => /^\/\/ Runs alone: /m.test(readFileSync(join(ROOT, file), 'utf8'));
const concurrency = Number(process.env['PLANTSTORE_TEST_CONCURRENCY'] ?? availableParallelism() + 1);
if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error('PLANTSTORE_TEST_CONCURRENCY is a whole number of files, 1 or more');

const phases = [
  { files: files.filter((file) => !runsAlone(file)), concurrency, what: `${concurrency} at a time` },
  { files: files.filter(runsAlone), concurrency: 1, what: 'one at a time: they measure time or memory, or load the machine' },
].filter((phase) => phase.files.length > 0);

let failed = false;
for (const phase of phases) {
  process.stdout.write(`\n== ${values.tier} tier: ${phase.files.length} test files, ${phase.what}\n`);
  const result = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--test',
      `--test-concurrency=${phase.concurrency}`,
      `--test-timeout=${TEST_TIMEOUT_MS}`,
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      `--test-reporter=${join(ROOT, 'test/reporters/slowest-files.mjs')}`,
      '--test-reporter-destination=stdout',
      ...phase.files,
    ],
    { cwd: ROOT, stdio: 'inherit' },
  );
  if (result.status !== 0) failed = true;
}
process.exitCode = failed ? 1 : 0;
