import { STORE_SETTINGS } from '../config/config.js';
import { parseGrace } from '../tokens/duration.js';
import { addSubscription, MOST_RETIRED_SECRETS, RETIRED_SECRET_MS, rotateSecret, updateSubscription } from '../webhooks/subscriptions.js';
import { type CommandContext, CommandFailed, helpText, parseCommandLine, UsageError, withStore, writeTable } from './command-line.js';
import { terminalJson, terminalText } from './terminal-text.js';
import { printHelp, subscriptionId } from './webhook-arguments.js';

/* The webhook subcommands that make, show, change and remove subscriptions. */

const help = {
  add: helpText(
    'plantstore webhook add URL [--description TEXT] [--allow-duplicate] [--json]',
    'Subscribes URL (http:// or https://, no credentials) to every plant created from now on, and\n' +
      'prints the subscription id and its signing secret; the secret is shown only this once.\n' +
      'A URL that an active subscription already has is refused (exit 1): it would get every plant\n' +
      'twice. --allow-duplicate adds it anyway, e.g. a second subscription, with its own secret, while\n' +
      'the receiver moves to it.\n' +
      'With --json: one object with id, url and secret.',
    STORE_SETTINGS,
  ),
  list: helpText(
    'plantstore webhook list [--json]',
    'Lists every subscription (never its secret): id, URL, description, state, pending messages,\n' +
      'delivered and failed counts, and the last error. The state is paused (webhook pause), else\n' +
      'failing when the latest attempt failed, else active.',
    STORE_SETTINGS,
  ),
  update: helpText(
    'plantstore webhook update ID --url URL [--description TEXT] [--allow-duplicate]',
    'Moves a subscription to another URL, checked as webhook add checks it; --description replaces\n' +
      'its description ("" removes it). Its secret and its messages stay: the pending ones go to the\n' +
      'new URL from a server\'s next look at the outbox; an attempt under way ends at the old one.\n' +
      'A URL that another active subscription has is refused (exit 1) unless --allow-duplicate.',
    STORE_SETTINGS,
  ),
  remove: helpText(
    'plantstore webhook remove ID',
    'Removes a subscription: no attempt starts for it from then on, and its pending messages are dropped.',
    STORE_SETTINGS,
  ),
  rotate: helpText(
    'plantstore webhook rotate-secret ID [--grace DURATION] [--json]',
    'Makes a new signing secret and prints it once. The secret it replaces goes on signing\n' +
      `deliveries beside it for --grace (default ${RETIRED_SECRET_MS / 3_600_000}h; 0 after a leak), so the receiver can switch\n` +
      'without losing a message; rotating again does not cut that short. Deliveries carry one\n' +
      'signature per live secret.\n' +
      `At most ${MOST_RETIRED_SECRETS} retired secrets sign at once: one more rotation is refused (exit 1) until the\n` +
      'oldest stops. With --json: one object with id, url, secret, previousSecretUntil and\n' +
      'retiredSecretsUntil (the end of each live retired secret, oldest first).',
    STORE_SETTINGS,
  ),
};

export async function add(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, {
    options: { description: { type: 'string' }, 'allow-duplicate': { type: 'boolean' }, json: { type: 'boolean' } },
    settingNames: STORE_SETTINGS,
    positionals: 1,
  });
  if (values.help) return printHelp(context, help.add);
  const url = positionals[0];
  if (url === undefined) throw new UsageError('webhook add needs the URL to deliver to');
  return withStore(values, context, async (store) => {
    const result = await addSubscription(store.webhooks, url, values.description, { allowDuplicate: values['allow-duplicate'] ?? false });
    if (!result.added && result.duplicateOf !== undefined) throw new CommandFailed(`${result.problem}; --allow-duplicate adds another`);
    if (!result.added) throw new UsageError(result.problem);
    const { id, url: stored, secret } = result.subscription;
    if (values.json) {
      context.stdout.write(`${terminalJson(JSON.stringify({ id, url: stored, secret }))}\n`);
    } else {
      context.stdout.write(`id: ${id}\nsecret: ${secret}\n`);
      context.stderr.write(`Subscribed ${terminalText(stored)}; it receives the plants created from now on. Store the secret now: it is not shown again.\n`);
    }
    return 0;
  });
}

export async function list(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values } = parseCommandLine(argv, { options: { json: { type: 'boolean' } }, settingNames: STORE_SETTINGS });
  if (values.help) return printHelp(context, help.list);
  return withStore(values, context, async (store) => {
    const rows = (await store.webhooks.listSubscriptions()).map((subscription) => ({
      id: subscription.id,
      url: subscription.url,
      description: subscription.description,
      // Failing: the latest outcome was a failed attempt; a 2xx since then makes it active again.
      state:
        subscription.pausedAt !== null
          ? 'paused'
          : subscription.lastErrorAt !== null && (subscription.lastDeliveredAt === null || subscription.lastErrorAt > subscription.lastDeliveredAt)
            ? 'failing'
            : 'active',
      pending: subscription.pending,
      delivered: subscription.delivered,
      failed: subscription.failed,
      lastError: subscription.lastError,
      lastErrorAt: subscription.lastErrorAt?.toISOString() ?? null,
      createdAt: subscription.createdAt.toISOString(),
    }));
    if (values.json) {
      context.stdout.write(`${terminalJson(JSON.stringify(rows, null, 2))}\n`);
      return 0;
    }
    // The URL, the description and a receiver's answer are others' words: shown escaped, one line a subscription.
    const table = [['ID', 'URL', 'DESCRIPTION', 'STATE', 'PENDING', 'DELIVERED', 'FAILED', 'LAST ERROR']].concat(
      rows.map((row) => [
        String(row.id),
        terminalText(row.url),
        row.description === null ? '-' : terminalText(row.description),
        row.state,
        String(row.pending),
        String(row.delivered),
        String(row.failed),
        row.lastError === null ? '-' : `${row.lastErrorAt} ${terminalText(row.lastError)}`,
      ]),
    );
    writeTable(context, table);
    return 0;
  });
}

export async function update(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, {
    options: { url: { type: 'string' }, description: { type: 'string' }, 'allow-duplicate': { type: 'boolean' } },
    settingNames: STORE_SETTINGS,
    positionals: 1,
  });
  if (values.help) return printHelp(context, help.update);
  const id = subscriptionId(positionals[0], 'update');
  if (values.url === undefined) throw new UsageError('webhook update needs --url URL, the URL to deliver to from now on');
  const url = values.url;
  return withStore(values, context, async (store) => {
    const result = await updateSubscription(store.webhooks, id, url, values.description, { allowDuplicate: values['allow-duplicate'] ?? false });
    if (result === undefined) throw new CommandFailed(`no webhook subscription with id ${id}`);
    if (!result.updated && result.duplicateOf !== undefined) throw new CommandFailed(`${result.problem}; --allow-duplicate moves it there anyway`);
    if (!result.updated) throw new UsageError(result.problem);
    context.stderr.write(
      `Webhook subscription ${id} now delivers to ${terminalText(result.subscription.url)}, with the same secret; ` +
        "its pending messages go there from a server's next look at the outbox.\n",
    );
    return 0;
  });
}

export async function remove(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, { options: {}, settingNames: STORE_SETTINGS, positionals: 1 });
  if (values.help) return printHelp(context, help.remove);
  const id = subscriptionId(positionals[0], 'remove');
  return withStore(values, context, async (store) => {
    if (!(await store.webhooks.removeSubscription(id))) throw new CommandFailed(`no webhook subscription with id ${id}`);
    context.stderr.write(`Removed webhook subscription ${id}; its pending messages were dropped.\n`);
    return 0;
  });
}

export async function rotate(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, {
    options: { json: { type: 'boolean' }, grace: { type: 'string' } },
    settingNames: STORE_SETTINGS,
    positionals: 1,
  });
  if (values.help) return printHelp(context, help.rotate);
  const id = subscriptionId(positionals[0], 'rotate-secret');
  const graceMs = values.grace === undefined ? RETIRED_SECRET_MS : parseGrace(values.grace);
  if (graceMs === undefined) throw new UsageError(`--grace must be 0 or a duration such as 90s, 15m, 12h, 30d or 2w, got ${JSON.stringify(values.grace)}`);
  return withStore(values, context, async (store) => {
    const now = new Date();
    const result = await rotateSecret(store.webhooks, id, now, graceMs);
    if (result === undefined) throw new CommandFailed(`no webhook subscription with id ${id}`);
    if (!result.rotated) throw new CommandFailed(result.problem);
    const { subscription, retiredUntil } = result;
    const live = subscription.retiredSecrets.filter((retired) => retired.until > now).map((retired) => retired.until.toISOString());
    if (values.json) {
      const shown = { id, url: subscription.url, secret: subscription.secret, previousSecretUntil: retiredUntil.toISOString(), retiredSecretsUntil: live };
      context.stdout.write(`${terminalJson(JSON.stringify(shown))}\n`);
    } else {
      context.stdout.write(`secret: ${subscription.secret}\n`);
      const older = live.slice(0, graceMs > 0 ? -1 : undefined);
      context.stderr.write(`New secret for webhook subscription ${id}; it is not shown again. ${retiredWindows(retiredUntil.toISOString(), graceMs, older)}\n`);
    }
    return 0;
  });
}

/** What the retired secrets still sign: the one just retired (until `previous`, for `graceMs`), and the `older` ones still live (oldest first). */
function retiredWindows(previous: string, graceMs: number, older: readonly string[]): string {
  const first = graceMs > 0 ? `The previous secret goes on signing beside it until ${previous} (${duration(graceMs)})` : 'The previous secret no longer signs';
  if (older.length === 0) return `${first}.`;
  return `${first}, and ${older.length} older ${older.length === 1 ? 'one until its' : 'ones until their'} own end (${older.join(', ')}).`;
}

/** A grace in hours, minutes or seconds, the largest that is whole: 24 hours, 90 seconds. */
function duration(milliseconds: number): string {
  for (const [unit, size] of [['hour', 3_600_000], ['minute', 60_000]] as const) {
    if (milliseconds % size === 0) return `${milliseconds / size} ${unit}${milliseconds === size ? '' : 's'}`;
  }
  return `${milliseconds / 1000} seconds`;
}
