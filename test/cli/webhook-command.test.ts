import assert from 'node:assert/strict';
import { test } from 'node:test';
import { existingStoreUrl, testBackends } from '../helpers/backends.js';
import { runMain } from '../helpers/in-process-cli.js';
import { runInProcess } from '../helpers/processes.js';
import { addWebhook, endRetiredSecret, listWebhooks } from '../helpers/webhooks.js';

for (const backend of await testBackends('the webhook command')) {
  test(`${backend.name}: webhook add prints the id and the secret once; list shows state and counts, never the secret`, async (t) => {
    const env = { DATABASE_URL: await existingStoreUrl(t, backend) };
    const added = await runInProcess(['webhook', 'add', 'https://example.com/hooks/plants', '--description', 'the catalogue'], env);
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stdout, /^id: 1\nsecret: whsec_[A-Za-z0-9+/]+=*\n$/);
    assert.match(added.stderr, /Store the secret now/);
    const secret = /secret: (\S+)/.exec(added.stdout)![1]!;
    const second = await addWebhook(env, 'http://127.0.0.1:9/second');
    assert.equal((await runInProcess(['webhook', 'add', 'http://127.0.0.1:9/third', '--description', 'spread\nover  lines'], env)).code, 0);
    assert.deepEqual(Object.keys(second), ['id', 'url', 'secret']);
    assert.equal(second.id, 2);

    const table = await runInProcess(['webhook', 'list'], env);
    assert.equal(table.code, 0, table.stderr);
    assert.match(
      table.stdout,
      /^ID\s+URL\s+DESCRIPTION\s+STATE\s+PENDING\s+DELIVERED\s+FAILED\s+LAST ERROR\n1\s+https:\/\/example\.com\/hooks\/plants\s+the catalogue\s+active\s+0\s+0\s+0\s+-\n2\s+http:\/\/127\.0\.0\.1:9\/second\s+-\s+active\s+0\s+0\s+0\s+-\n3\s+http:\/\/127\.0\.0\.1:9\/third\s+spread\\nover  lines\s+active\s+0\s+0\s+0\s+-\n$/,
      'the description in the table, its newline shown escaped: one line a subscription',
    );
    assert.ok(!table.stdout.includes(secret) && !table.stdout.includes('whsec_'), 'no secret in the list');
    const listed = await listWebhooks(env);
    assert.deepEqual(
      listed.map(({ id, url, state, pending, delivered, failed, lastError }) => ({ id, url, state, pending, delivered, failed, lastError })),
      [
        { id: 1, url: 'https://example.com/hooks/plants', state: 'active', pending: 0, delivered: 0, failed: 0, lastError: null },
        { id: 2, url: 'http://127.0.0.1:9/second', state: 'active', pending: 0, delivered: 0, failed: 0, lastError: null },
        { id: 3, url: 'http://127.0.0.1:9/third', state: 'active', pending: 0, delivered: 0, failed: 0, lastError: null },
      ],
    );
    assert.equal((listed[0] as unknown as { description: string }).description, 'the catalogue');
    assert.ok(!JSON.stringify(listed).includes('whsec_'));

    const rotated = await runInProcess(['webhook', 'rotate-secret', '1'], env);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /^secret: whsec_[A-Za-z0-9+/]+=*\n$/);
    assert.ok(!rotated.stdout.includes(secret), 'a new secret');
    const [, shownUntil] = /The previous secret goes on signing beside it until (\S+) \(24 hours\)\.\n$/.exec(rotated.stderr) ?? [];
    assert.ok(shownUntil !== undefined, rotated.stderr);
    assert.ok(Math.abs(Date.parse(shownUntil) - (Date.now() + 24 * 3_600_000)) < 60_000, `${shownUntil} is 24 hours from now`);

    const removed = await runInProcess(['webhook', 'remove', '1'], env);
    assert.equal(removed.code, 0, removed.stderr);
    assert.deepEqual((await listWebhooks(env)).map((subscription) => subscription.id), [2, 3]);

    const paused = await runInProcess(['webhook', 'pause', '2'], env);
    assert.equal(paused.code, 0, paused.stderr);
    assert.match((await runInProcess(['webhook', 'list'], env)).stdout, /\n2\s+http:\/\/127\.0\.0\.1:9\/second\s+-\s+paused\s+0\s+0\s+0\s+-\n/);
    assert.match((await runInProcess(['webhook', 'pause', '2'], env)).stderr, /was already paused/);
    assert.equal((await runInProcess(['webhook', 'resume', '2'], env)).code, 0);
    assert.deepEqual((await listWebhooks(env)).map((subscription) => subscription.state), ['active', 'active']);
  });

  test(`${backend.name}: rotate-secret says until when each retired secret signs; past 5 live ones it is refused until the oldest ends`, async (t) => {
    const env = { DATABASE_URL: await existingStoreUrl(t, backend) };
    const added = await runMain(['webhook', 'add', 'https://example.com/hooks/plants', '--json'], env);
    const { id, secret: first } = JSON.parse(added.stdout) as { id: number; secret: string };
    const rotate = () => runMain(['webhook', 'rotate-secret', String(id), '--json'], env);
    const shown: { id: number; url: string; secret: string; previousSecretUntil: string; retiredSecretsUntil: string[] }[] = [];
    for (let rotation = 1; rotation <= 5; rotation++) {
      const rotated = await rotate();
      assert.equal(rotated.code, 0, rotated.stderr);
      shown.push(JSON.parse(rotated.stdout));
    }
    const last = shown.at(-1)!;
    assert.deepEqual(Object.keys(last), ['id', 'url', 'secret', 'previousSecretUntil', 'retiredSecretsUntil']);
    assert.equal(last.url, 'https://example.com/hooks/plants');
    assert.ok(Math.abs(Date.parse(last.previousSecretUntil) - (Date.now() + 24 * 3_600_000)) < 60_000, `${last.previousSecretUntil} is 24 hours from now`);
    assert.deepEqual(last.retiredSecretsUntil, shown.map((rotation) => rotation.previousSecretUntil), 'every retired secret keeps its own end');

    const refused = await rotate();
    assert.equal(refused.code, 1);
    assert.equal(refused.stdout, '');
    // The line that names the store, then the refusal.
    assert.equal(
      refused.stderr.split('\n').slice(1).join('\n'),
      `plantstore: webhook subscription ${id} has 5 retired secrets still signing, the most at once; rotate again once the oldest stops, at ${shown[0]!.previousSecretUntil}\n`,
    );

    await endRetiredSecret(env.DATABASE_URL, first);
    const text = await runMain(['webhook', 'rotate-secret', String(id)], env);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stderr, /The previous secret goes on signing beside it until \S+ \(24 hours\), and 4 older ones until their own end \((\S+Z, ){3}\S+Z\)\.\n$/);
    assert.ok(text.stderr.includes(shown[1]!.previousSecretUntil), 'names the ends of the older ones');

    const badGrace = await runMain(['webhook', 'rotate-secret', String(id), '--grace', 'soon'], env);
    assert.deepEqual([badGrace.code, badGrace.stderr], [2, 'plantstore: --grace must be 0 or a duration such as 90s, 15m, 12h, 30d or 2w, got "soon"\n']);
    await endRetiredSecret(env.DATABASE_URL, shown[0]!.secret);
    const leaked = await runMain(['webhook', 'rotate-secret', String(id), '--grace', '0'], env);
    assert.equal(leaked.code, 0, leaked.stderr);
    assert.match(leaked.stderr, /The previous secret no longer signs, and 4 older ones until their own end/);
  });

  test(`${backend.name}: webhook add refuses a URL an active subscription already has, as stored, unless --allow-duplicate`, async (t) => {
    const env = { DATABASE_URL: await existingStoreUrl(t, backend) };
    const add = async (args: string[]) => {
      const added = await runMain(['webhook', 'add', ...args, '--json'], env);
      assert.equal(added.code, 0, added.stderr);
      return JSON.parse(added.stdout) as { id: number; url: string };
    };
    const listed = async () => JSON.parse((await runMain(['webhook', 'list', '--json'], env)).stdout) as { id: number }[];
    const { id } = await add(['https://example.com/hooks/plants?source=plantstore']);
    // The same URL once parsed: host case and the default port do not make it another.
    const again = await runMain(['webhook', 'add', 'https://EXAMPLE.com:443/hooks/plants?source=plantstore'], env);
    assert.equal(again.code, 1);
    assert.equal(again.stdout, '');
    assert.equal(again.stderr.split('\n').slice(1).join('\n'), `plantstore: webhook subscription ${id} already delivers to this URL; --allow-duplicate adds another\n`);
    assert.deepEqual((await listed()).map((subscription) => subscription.id), [id], 'nothing added');

    const other = await add(['https://example.com/hooks/plants?source=other']);
    const duplicate = await add(['https://example.com/hooks/plants?source=plantstore', '--allow-duplicate']);
    assert.equal(duplicate.url, 'https://example.com/hooks/plants?source=plantstore');
    assert.deepEqual((await listed()).map((subscription) => subscription.id), [id, other.id, duplicate.id]);
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
    [['webhook', 'update', '1'], 2, /needs --url URL/],
    [['webhook', 'update', '42', '--url', 'https://example.com/'], 1, /no webhook subscription with id 42/],
    [['webhook', 'messages'], 2, /needs the ID/],
    [['webhook', 'messages', '42'], 1, /no webhook subscription with id 42/],
    [['webhook', 'messages', '1', '--status', 'lost'], 2, /--status is one of pending, failed, delivered/],
    [['webhook', 'messages', '1', '--limit', '0'], 2, /--limit is a whole number from 1 to 10000/],
    [['webhook', 'resend'], 2, /needs a subscription ID and --failed, or the webhook-id/],
    [['webhook', 'resend', '1'], 2, /needs --failed/],
    [['webhook', 'resend', 'msg_k_1', '--failed'], 2, /--failed goes with a subscription ID/],
    [['webhook', 'resend', 'msg_nonumber'], 2, /is not the webhook-id of a message/],
    [['webhook', 'resend', 'msg_k_1'], 1, /no active webhook subscription sends that message/],
    [['webhook', 'resend', '42', '--failed'], 1, /no webhook subscription with id 42/],
    [['webhook', 'pause', '42'], 1, /no webhook subscription with id 42/],
    [['webhook', 'resume', '42'], 1, /no webhook subscription with id 42/],
    [['webhook', 'ping', 'first'], 2, /a subscription ID is a whole number/],
  ];
  for (const [args, code, message] of cases) {
    const result = await runInProcess(args, env);
    assert.equal(result.code, code, `${args.join(' ')}: ${result.stderr}`);
    assert.match(result.code === 2 && args.length === 1 ? result.stdout : result.stderr, message, args.join(' '));
  }
  assert.ok(!(await runInProcess(['webhook', 'add', 'https://user:secret@example.com/'], env)).stderr.includes('secret@'), 'credentials are not echoed');
  const help = await runInProcess(['webhook', 'add', '--help'], env);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /Usage: plantstore webhook add URL/);
});

test('WEBHOOK_RETRY_MAX_MS below WEBHOOK_RETRY_MIN_MS is refused at start with exit code 2', async () => {
  const result = await runInProcess(['config'], { WEBHOOK_RETRY_MIN_MS: '5000', WEBHOOK_RETRY_MAX_MS: '1000' });
  assert.equal(result.code, 2);
  assert.match(result.stderr, /WEBHOOK_RETRY_MAX_MS must be at least WEBHOOK_RETRY_MIN_MS \(5000\), got 1000/);
});
