import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sqlite } from '../helpers/backends.js';
import { runMain } from '../helpers/in-process-cli.js';
import { createToken, postPlant, runCli, runInProcess, startServer } from '../helpers/processes.js';

test('a wrong setting fails at start with one line that names it, and exit code 2', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const cases: [Record<string, string>, string[], string][] = [
    [{ PORT: 'eighty' }, [], 'plantstore: PORT must be a whole number from 0 to 65535, got "eighty"\n'],
    [{ PORT: '70000' }, [], 'plantstore: PORT must be a whole number from 0 to 65535, got "70000"\n'],
    [{}, ['--port', '-1'], "plantstore: Option '--port' argument is ambiguous\n"],
    [{}, ['--port', '1.5'], 'plantstore: --port must be a whole number from 0 to 65535, got "1.5"\n'],
    [{ LOG_LEVEL: 'loud' }, [], 'plantstore: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"\n'],
    [{ DATABASE_URL: 'mysql://user:secret@db/plants' }, [], 'plantstore: DATABASE_URL must be a database URL: sqlite:PATH or postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE\n'],
    [{ DATABASE_URL: 'postgres://user:secret@[db/plants' }, [], 'plantstore: DATABASE_URL is not a valid PostgreSQL URL (a host is not HOST or HOST:PORT); the form is postgres://USER:PASSWORD@HOST:PORT[,HOST:PORT...]/DATABASE\n'],
    [{ DATABASE_POOL_SIZE: '0' }, [], 'plantstore: DATABASE_POOL_SIZE must be a whole number from 1 to 1000, got "0"\n'],
    [{}, ['--workers', 'many'], 'plantstore: --workers must be a whole number from 1 to 256, got "many"\n'],
    [{ HOST: 'a b' }, [], 'plantstore: HOST must be a host name or IP address, got "a b"\n'],
    [{ BODY_LIMIT: '0' }, [], 'plantstore: BODY_LIMIT must be a whole number from 1 to 67108864, got "0"\n'],
    [{ TOKEN_CACHE_TTL_MS: '5000' }, [], 'plantstore: TOKEN_CACHE_TTL_MS must be a whole number from 0 to 1000, got "5000"\n'],
    [{ DOCS: 'maybe' }, [], 'plantstore: DOCS must be one of on, off, got "maybe"\n'],
    [{ MAX_CONNECTIONS_PER_ADDRESS: '-1' }, [], 'plantstore: MAX_CONNECTIONS_PER_ADDRESS must be a whole number from 0 to 1000000, got "-1"\n'],
    [{ KEEP_ALIVE_TIMEOUT_MS: '0' }, [], 'plantstore: KEEP_ALIVE_TIMEOUT_MS must be a whole number from 1000 to 3600000, got "0"\n'],
    [{}, ['--verbose'], "plantstore: Unknown option '--verbose'\n"],
    [{}, ['extra'], 'plantstore: Unexpected argument \'extra\'\n'],
  ];
  for (const [index, [vars, args, stderr]] of cases.entries()) {
    // The first as the process operators start; the rest in this process, as each stops at its settings before serve starts anything.
    const run = index === 0 ? runCli : runInProcess;
    const result = await run(['serve', ...args], { ...env, ...vars });
    assert.equal(result.code, 2, JSON.stringify(vars) + args.join(' '));
    assert.equal(result.stderr, stderr);
    assert.equal(result.stdout, '');
  }
});

test('a flag overrides its environment variable', async (t) => {
  const server = await startServer(t, { DATABASE_URL: 'mysql://ignored', PORT: 'ignored' }, ['--database-url', await sqlite.freshUrl(t)]);
  const health = await fetch(`${server.url}/healthz`);
  assert.equal(health.status, 200);
});

test('an unknown command fails with exit code 2', async () => {
  const result = await runInProcess(['grow']);
  assert.equal(result.code, 2);
  assert.equal(result.stderr, 'plantstore: unknown command "grow"; run plantstore --help\n');
});

test('a server with no token logs how to create one', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const server = await startServer(t, env);
  const hint = server.logs.find((line) => String(line['msg']).includes('no API token exists yet'));
  assert.ok(hint, 'the hint was logged');
  assert.equal(hint['msg'], 'no API token exists yet: create one with `bin/plantstore token create --name NAME`');
});

test('the start line names the address and the API reference, which DOCS=off leaves out', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  for (const [docs, expected] of [['on', (url: string) => `${url}/docs`], ['off', () => undefined]] as const) {
    const server = await startServer(t, { ...env, DOCS: docs });
    const start = server.logs.find((line) => line['msg'] === 'plantstore serving');
    assert.equal(start?.['url'], server.url);
    assert.equal(start?.['docs'], expected(server.url), `DOCS=${docs}`);
    assert.equal((await fetch(`${server.url}/docs`)).status, docs === 'on' ? 200 : 404);
    assert.equal(await server.stop(), 0);
  }
});

test('SIGTERM and SIGINT stop the server, which exits 0 and keeps what it acknowledged', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const token = await createToken(env, 'ci');
  for (const [id, signal] of [[1, 'SIGTERM'], [2, 'SIGINT']] as const) {
    const server = await startServer(t, env);
    assert.ok(!server.logs.some((line) => String(line['msg']).includes('no API token')), 'no hint when a token exists');
    assert.equal((await postPlant(server.url, token, `{"id":${id},"name":"kept"}`)).status, 200);
    assert.equal(await server.stop(signal), 0);
  }
  const exported = await runInProcess(['plants', 'export'], env);
  assert.equal(exported.stdout, '{"id":1,"name":"kept"}\n{"id":2,"name":"kept"}\n');
});

test('--help lines its settings up in columns two spaces apart: every meaning, and each of its wrapped lines, starts in one column', async () => {
  for (const command of [['serve'], ['config'], ['token', 'list'], ['copy']]) {
    const help = await runMain([...command, '--help']);
    assert.equal(help.code, 0, command.join(' '));
    const lines = help.stdout.split('Settings (flag, environment variable, meaning):\n')[1]!.trimEnd().split('\n');
    const rows = lines.map((line) => /^ {2}(--[a-z-]+) +([A-Z_]+) +\S/.exec(line));
    assert.ok(rows[0] !== null && rows.filter((row) => row !== null).length >= 2, `${command.join(' ')} --help lists settings`);
    const flagWidth = Math.max(...rows.map((row) => row?.[1]!.length ?? 0));
    const envWidth = Math.max(...rows.map((row) => row?.[2]!.length ?? 0));
    const meaningColumn = 2 + flagWidth + 2 + envWidth + 2;
    for (const [i, line] of lines.entries()) {
      const where = `${command.join(' ')} --help: ${JSON.stringify(line)}`;
      // Names wider than their columns stand alone on their line, the meaning below in its column.
      const alone = /^ {2}(--[a-z-]+) {2}([A-Z_]+)$/.exec(line);
      if (alone) {
        assert.ok(alone[1]!.length > flagWidth || alone[2]!.length > envWidth, `${where}: names that fit their columns keep their meaning beside them`);
        assert.equal(lines[i + 1]?.search(/\S/), meaningColumn, `${where}: its meaning starts on the next line, in the meaning's column`);
        continue;
      }
      const row = rows[i];
      if (row) assert.equal(line.indexOf(` ${row[2]} `) + 1, 2 + flagWidth + 2, `${where}: the variable's column`);
      const meaningStart = row ? row[0].length - 1 : line.search(/\S/);
      assert.equal(meaningStart, meaningColumn, `${where}: the meaning's column`);
      assert.ok(line.length <= 120, `${where}: at most 120 columns`);
    }
  }
});
