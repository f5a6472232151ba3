// npx tsx bench/backup-cost.ts [--plants N] [--connections N] [--duration S] [--rounds N] [--backup-dir DIR]
// What `plantstore backup` costs the creates beside it. A SQLite store of --plants plants
// (1,000,000) is served (core 0) and loaded by --connections clients creating plants (8; core 1),
// with no backup and with backups taken one after another for the whole run, in alternating rounds;
// the backups run unpinned, as an operator's would. Prints a table: creates a second and p99 of
// each run, and the backups' durations and size; first, one backup of the store at rest. The
// backups go beside the store, or to --backup-dir (another disk, or /dev/shm to leave the disk out).
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { hasCommand, type LoadResult, loadGenerator } from './load/load-generator.js';
import { startService } from './servers.js';
import { freshStore, preload } from './stores.js';

const BIN = fileURLToPath(new URL('../bin/plantstore', import.meta.url));
const run = promisify(execFile);

const { values } = parseArgs({
  options: {
    plants: { type: 'string', default: '1000000' },
    connections: { type: 'string', default: '8' },
    duration: { type: 'string', default: '15' },
    rounds: { type: 'string', default: '3' },
    'backup-dir': { type: 'string' },
  },
});
const plants = Number(values.plants);
const connections = Number(values.connections);
const seconds = Number(values.duration);
const rounds = Number(values.rounds);

const pinning = availableParallelism() >= 2 && hasCommand('taskset');
const [serverCpu, loadCpu] = pinning ? [0, 1] : [undefined, undefined];

interface Backup {
  seconds: number;
  bytes: number;
}

/** `plantstore backup` into `file`, as an operator runs it: timed from start to exit. */
async function backUp(databaseUrl: string, file: string): Promise<Backup> {
  const started = process.hrtime.bigint();
  const { stdout } = await run(process.execPath, [BIN, 'backup', file, '--force', '--json'], { env: { ...process.env, DATABASE_URL: databaseUrl } });
  const { bytes } = JSON.parse(stdout) as { bytes: number };
  return { seconds: Number(process.hrtime.bigint() - started) / 1e9, bytes };
}

/** Backups one after another until `stop` is called; resolves them all. */
function backupsUntilStopped(databaseUrl: string, file: string): { stop(): Promise<Backup[]> } {
  let stopping = false;
  const taken: Backup[] = [];
  const loop = (async () => {
    while (!stopping) taken.push(await backUp(databaseUrl, file));
  })();
  return {
    stop: async () => {
      stopping = true;
      await loop;
      return taken;
    },
  };
}

const median = (numbers: number[]) => [...numbers].sort((a, b) => a - b)[Math.floor(numbers.length / 2)] ?? NaN;
const row = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;

const store = await freshStore('sqlite', '');
const folder = dirname(store.url.slice('sqlite:'.length));
const target = join(values['backup-dir'] ?? folder, `plantstore-bench-backup-${process.pid}.db`);
try {
  process.stderr.write(`preloading ${plants} plants\n`);
  await preload(store.url, plants, () => undefined);
  const atRest = await backUp(store.url, target);
  const server = await startService({ DATABASE_URL: store.url, LOG_LEVEL: 'warn' }, serverCpu);
  try {
    let idBase = plants + 1_000_000;
    const load = async (duration: number): Promise<LoadResult> => {
      const result = await loadGenerator.run({ url: server.url, token: store.token, connections, seconds: duration, idBase, cpu: loadCpu });
      idBase += 10_000_000;
      return result;
    };
    await load(2); // warm-up
    const lines = [
      `${plants} plants, ${connections} connections creating (${loadGenerator.name}), ${seconds} s a run; a backup at rest: ${atRest.seconds.toFixed(2)} s, ${atRest.bytes} bytes`,
      '',
      row(['round', 'backups', 'creates/s', 'p99 ms', 'errors + non-2xx', 'backups taken', 'median backup s']),
      row(['---', '---', '---', '---', '---', '---', '---']),
    ];
    for (let round = 1; round <= rounds; round++) {
      for (const withBackups of [false, true]) {
        const backups = withBackups ? backupsUntilStopped(store.url, target) : undefined;
        const result = await load(seconds);
        const taken = (await backups?.stop()) ?? [];
        const backupCells = withBackups ? [taken.length, median(taken.map((backup) => backup.seconds)).toFixed(2)] : ['', ''];
        lines.push(row([round, withBackups ? 'one after another' : 'none', result.requestsPerSecond.toFixed(0), result.p99Ms.toFixed(1), result.errors + result.non2xx, ...backupCells]));
        process.stderr.write(`${lines.at(-1)}\n`);
      }
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await server.stop();
  }
} finally {
  rmSync(target, { force: true });
  await store.cleanup();
}
