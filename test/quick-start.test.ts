import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { sqlite } from './helpers/backends.js';
import { postPlant, startServer } from './helpers/processes.js';
import { until, within } from './helpers/until.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** The shell blocks of the README's section that creates a plant, as a reader copies them. */
function quickStart(): string {
  const section = readFileSync(`${ROOT}README.md`, 'utf8').split(/^## /m).find((part) => part.startsWith('Create a plant\n'));
  assert.ok(section !== undefined, 'the README has a section "Create a plant"');
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map(([, block]) => block!).join('');
}

/** Runs `script` with sh in the repository's folder, as a reader does, and resolves its stdout. */
async function sh(script: string, env: Record<string, string>): Promise<string> {
  const child = spawn('sh', ['-c', script], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [code] = (await within('the quick start exits', once(child, 'close'), 60_000)) as [number | null];
  assert.equal(code, 0, stderr);
  return stdout;
}

test("the README's quick start runs twice in a row, each run with a token the server accepts", async (t) => {
  const script = quickStart();
  // The part that makes the token, run as written; the request is then sent as its curl line says.
  const tokenPart = script.split('\n').filter((line) => line.startsWith('TOKEN='));
  assert.equal(tokenPart.length, 1, script);
  const body = /-d '([^']+)'/.exec(script)?.[1];
  const answer = /^# (\{.*\})$/m.exec(script)?.[1];
  assert.ok(body !== undefined && answer !== undefined, script);

  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const server = await startServer(t, env);
  const tokens: string[] = [];
  for (const run of [1, 2]) {
    const token = await sh(`${tokenPart[0]}\nprintf %s "$TOKEN"`, env);
    assert.match(token, /^ps_[A-Za-z0-9_-]{43}$/, `run ${run} made a token`);
    const created = await postPlant(server.url, token, body);
    assert.deepEqual([created.status, created.body], [200, answer], `run ${run}'s token is accepted`);
    tokens.push(token);
  }
  await until("the first run's token, replaced by the second's, is refused", async () => (await postPlant(server.url, tokens[0]!, body)).status === 401, 5000);
});
