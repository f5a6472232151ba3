import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { accessSync, chmodSync, constants, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createConnection, createServer } from 'node:net';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { Backend } from './backends.js';
import { freshPostgresDatabase, postgresReachable } from './postgres.js';
import { tempDir } from './temp-dir.js';

/**
 * The deployment of deploy/: nginx and PgBouncer from Debian's packages,
 * started from the repository's own configuration files with the
 * placeholders filled in, each in a folder of its own, stopped after the test.
 */
const DEPLOY = new URL('../../deploy/', import.meta.url);
const TOOLS = { nginx: '/usr/sbin/nginx', pgbouncer: '/usr/sbin/pgbouncer' } as const;
/** How long a started program has to listen on its port. */
const START_TIMEOUT_MS = 10_000;

/** Why the fleet tests cannot run here, or undefined; under CI=true a missing tool fails instead. */
export async function fleetSkipReason(): Promise<string | undefined> {
  const missing = Object.entries(TOOLS)
    .filter(([, path]) => !isExecutable(path))
    .map(([name]) => name);
  const reason =
    missing.length > 0
      ? `${missing.join(' and ')} not installed (apt-get install nginx pgbouncer)`
      : !(await postgresReachable())
        ? 'no PostgreSQL answers'
        : undefined;
  if (reason !== undefined && process.env['CI'] === 'true') throw new Error(`the fleet tests need ${reason}`);
  return reason;
}

/** A configuration file of deploy/ with its `{{NAME}}` placeholders filled in; every one must be. */
export function fillTemplate(file: string, values: Record<string, string | number>): string {
  const text = readFileSync(new URL(file, DEPLOY), 'utf8').replaceAll(/\{\{([A-Z0-9_]+)\}\}/g, (whole, name: string) => {
    if (!(name in values)) throw new Error(`${file}: no value for ${whole}`);
    return String(values[name]);
  });
  return text;
}

/** A TCP port that was free a moment ago. */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

/** PgBouncer in transaction pooling mode in front of the test PostgreSQL; resolves its port. */
export async function startPgBouncer(t: TestContext, postgres: { host: string; port: number }): Promise<number> {
  const dir = sharedDir(t);
  const port = await freePort();
  writeFileSync(join(dir, 'userlist.txt'), '"postgres" ""\n');
  const config = join(dir, 'pgbouncer.ini');
  writeFileSync(
    config,
    fillTemplate('pgbouncer.ini', { POSTGRES_HOST: postgres.host, POSTGRES_PORT: postgres.port, LISTEN_PORT: port, RUN_DIR: dir, AUTH_TYPE: 'trust' }),
  );
  // PgBouncer will not run as root.
  const asRoot = process.getuid?.() === 0;
  await startProgram(t, TOOLS.pgbouncer, [...(asRoot ? ['-u', 'postgres'] : []), config], port, join(dir, 'pgbouncer.log'));
  return port;
}

/** A fresh PostgreSQL database, reached through a PgBouncer of its own; resolves the URL through PgBouncer. */
export async function freshPooledDatabase(t: TestContext): Promise<string> {
  const direct = new URL(await freshPostgresDatabase(t));
  const port = await startPgBouncer(t, { host: direct.hostname, port: Number(direct.port || 5432) });
  const pooled = new URL(direct);
  pooled.port = String(port);
  return pooled.toString();
}

/** PostgreSQL through PgBouncer in transaction pooling mode, a pooler of its own for each test. */
export const pooledPostgres: Backend = { name: 'postgres through PgBouncer', freshUrl: freshPooledDatabase };

/** nginx in front of two instances on these ports; resolves its URL. */
export async function startNginx(t: TestContext, instancePorts: readonly [number, number]): Promise<string> {
  const dir = sharedDir(t);
  const port = await freePort();
  const config = join(dir, 'nginx.conf');
  writeFileSync(
    config,
    fillTemplate('nginx.conf', { RUN_DIR: dir, LISTEN_PORT: port, INSTANCE_1_PORT: instancePorts[0], INSTANCE_2_PORT: instancePorts[1] }),
  );
  await startProgram(t, TOOLS.nginx, ['-p', dir, '-c', config, '-g', 'daemon off;'], port, join(dir, 'nginx-error.log'));
  return `http://127.0.0.1:${port}`;
}

/** A folder that the programs' own users (nginx's workers, PgBouncer's postgres) can use too. */
function sharedDir(t: TestContext): string {
  const parent = tempDir(t);
  chmodSync(parent, 0o755);
  const dir = join(parent, 'run');
  mkdirSync(dir);
  chmodSync(dir, 0o777);
  return dir;
}

async function startProgram(t: TestContext, path: string, args: readonly string[], port: number, log: string): Promise<ChildProcess> {
  const child = spawn(path, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  t.after(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
  });
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      let logged = '';
      try {
        logged = readFileSync(log, 'utf8');
      } catch {
        // No log written yet.
      }
      child.kill('SIGKILL');
      throw new Error(`${path} did not listen on ${port}: ${stderr}${logged}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return child;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
