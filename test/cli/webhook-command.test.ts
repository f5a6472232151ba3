import assert from 'node:assert/strict';
import { test } from 'node:test';
import { existingStoreUrl, testBackends } from '../helpers/backends.js';
import { runCli } from '../helpers/processes.js';
import { addWebhook, listWebhooks } from '../helpers/webhooks.js';

for (const backend of await testBackends('the webhook command')) {
  test(`${backend.name}: webhook add prints the id and the secret once; list shows state and counts, never the secret`, async (t) => {
    const env = { DATABASE_URL: await existingStoreUrl(t, backend) };
    const added = await runCli(['webhook', 'add', 'https://example.com/hooks/plants', '--description', 'the catalogue'], env);
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stdout, /^id: 1\nsecret: whsec_[A-Za-z0-9+/]+=*\n$/);
    assert.match(added.stderr, /Store the secret now/);
    const secret = /secret: (\S+)/.exec(added.stdout)![1]!;
    const second = await addWebhook(env, 'http://127.0.0.1:9/second');
    assert.deepEqual(Object.keys(second), ['id', 'url', 'secret']);
    assert.equal(second.id, 2);

    const table = await runCli(['webhook', 'list'], env);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^ID\s+URL\s+STATE\s+PENDING\s+DELIVERED\s+FAILED\s+LAST ERROR\n1\s+https:\/\/example\.com\/hooks\/plants\s+active\s+0\s+0\s+0\s+-\n2\s+/);
    assert.ok(!table.stdout.includes(secret) && !table.stdout.includes('whsec_'), 'no secret in the list');
    const listed = await listWebhooks(env);
    assert.deepEqual(
      listed.map(({ id, url, state, pending, delivered, failed, lastError }) => ({ id, url, state, pending, delivered, failed, lastError })),
      [
        { id: 1, url: 'https://example.com/hooks/plants', state: 'active', pending: 0, delivered: 0, failed: 0, lastError: null },
        { id: 2, url: 'http://127.0.0.1:9/second', state: 'active', pending: 0, delivered: 0, failed: 0, lastError: null },
      ],
    );
    assert.equal((listed[0] as unknown as { description: string }).description, 'the catalogue');
    assert.ok(!JSON.stringify(listed).includes('whsec_'));

    const rotated = await runCli(['webhook', 'rotate-secret', '1'], env);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /^secret: whsec_/);
    assert.ok(!rotated.stdout.includes(secret), 'a new secret');
    assert.match(rotated.stderr, /24 hours/);

    const removed = await runCli(['webhook', 'remove', '1'], env);
    assert.equal(removed.code, 0, removed.stderr);
    assert.deepEqual((await listWebhooks(env)).map((subscription) => subscription.id), [2]);
  });
}

test('webhook commands used wrongly exit 2, and those that find nothing exit 1, as the token commands do', async (t) => {
  const { sqlite } = await import('../helpers/backends.js');
  const env = { DATABASE_URL: await existingStoreUrl(t, sqlite) };
  const cases: [string[], number, RegExp][] = [
    [['webhook'], 2, /Usage: plantstore webhook/],
    [['webhook', 'frob'], 2, /unknown webhook subcommand "frob"/],
    [['webhook', 'add'], 2, /needs the URL/],
    [['webhook', 'add', 'ftp://example.com/'], 2, /must be an http:\/\/ or https:\/\/ URL/],
    [['webhook', 'add', 'https://user:secret@example.com/'], 2, /without credentials/],
    [['webhook', 'add', 'https://example.com/', '--bogus'], 2, /Unknown option '--bogus'/],
    [['webhook', 'remove'], 2, /needs the ID/],
    [['webhook', 'remove', 'first'], 2, /a subscription ID is a whole number/],
    [['webhook', 'remove', '42'], 1, /no webhook subscription with id 42/],
    [['webhook', 'rotate-secret', '42'], 1, /no webhook subscription with id 42/],
  ];
  for (const [args, code, message] of cases) {
    const result = await runCli(args, env);
    assert.equal(result.code, code, `${args.join(' ')}: ${result.stderr}`);
    assert.match(result.code === 2 && args.length === 1 ? result.stdout : result.stderr, message, args.join(' '));
  }
  assert.ok(!(await runCli(['webhook', 'add', 'https://user:secret@example.com/'], env)).stderr.includes('secret@'), 'credentials are not echoed');
  const help = await runCli(['webhook', 'add', '--help'], env);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /Usage: plantstore webhook add URL/);
});

test('WEBHOOK_RETRY_MAX_MS below WEBHOOK_RETRY_MIN_MS is refused at start with exit code 2', async () => {
  const result = await runCli(['config'], { WEBHOOK_RETRY_MIN_MS: '5000', WEBHOOK_RETRY_MAX_MS: '1000' });
  assert.equal(result.code, 2);
  assert.match(result.stderr, /WEBHOOK_RETRY_MAX_MS must be at least WEBHOOK_RETRY_MIN_MS \(5000\), got 1000/);
});
