import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { sqlite } from '../helpers/backends.js';
import { runMain } from '../helpers/in-process-cli.js';
import { runCli, startServer } from '../helpers/processes.js';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

test('plantstore --version and plantstore version print the version of package.json alone, exit 0', async () => {
  for (const args of [['--version'], ['version']]) {
    const result = await runCli(args);
    assert.deepEqual(result, { code: 0, stdout: `${version}\n`, stderr: '' }, args.join(' '));
  }
  const top = await runCli(['--help']);
  assert.match(top.stdout, /^ {2}version\b.*--version/m, 'the usage lists it');
});

test("the server's start line carries the version", async (t) => {
  const server = await startServer(t, { DATABASE_URL: await sqlite.freshUrl(t) });
  const start = server.logs.find((line) => line['msg'] === 'plantstore serving');
  assert.equal(start?.['version'], version);
});

test("plantstore help COMMAND prints that command's own help, exit 0", async () => {
  const commands = [['serve'], ['token'], ['token', 'create'], ['token', 'list'], ['token', 'revoke'], ['token', 'update'], ['webhook'], ['webhook', 'add'], ['webhook', 'update'], ['webhook', 'messages'], ['webhook', 'resend'], ['webhook', 'pause'], ['webhook', 'ping'], ['plants'], ['plants', 'export'], ['plants', 'import'], ['copy'], ['backup'], ['restore'], ['config'], ['schema'], ['version']];
  for (const command of commands) {
    const viaHelp = await runMain(['help', ...command]);
    const viaFlag = await runMain([...command, '--help']);
    assert.equal(viaHelp.code, 0, command.join(' '));
    assert.equal(viaHelp.stderr, '', command.join(' '));
    assert.match(viaHelp.stdout, new RegExp(`^Usage: plantstore ${command.join(' ')}\\b`), command.join(' '));
    assert.equal(viaHelp.stdout, viaFlag.stdout, `help ${command.join(' ')} is ${command.join(' ')} --help`);
  }
  const top = await runMain(['help']);
  assert.equal(top.code, 0);
  assert.match(top.stdout, /^Usage: plantstore <command>/);
});

test('plantstore help with an unknown command is a usage error', async () => {
  for (const [args, stderr] of [
    [['help', 'grow'], 'plantstore: unknown command "grow"; run plantstore --help\n'],
    [['help', 'token', 'grow'], 'plantstore: unknown token subcommand "grow"; expected create, list, revoke, rotate or update\n'],
  ] as const) {
    const result = await runMain(args);
    assert.deepEqual(result, { code: 2, stdout: '', stderr }, args.join(' '));
  }
});
