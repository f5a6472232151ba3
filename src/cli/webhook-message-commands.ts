import { STORE_SETTINGS } from '../config/config.js';
import type { MessageState, OutboxMessage, Subscription } from '../store/webhook-store.js';
import { parseWebhookId, webhookId } from '../webhooks/message.js';
import { type CommandContext, CommandFailed, helpText, parseCommandLine, UsageError, withStore, writeTable } from './command-line.js';
import { terminalJson, terminalText } from './terminal-text.js';
import { activeSubscription, printHelp, subscriptionId } from './webhook-arguments.js';

/* The webhook subcommands that show a subscription's messages and queue them again. */

/** Messages shown without --limit: a screenful or two, newest first. */
const DEFAULT_LIMIT = 100;
/** Most messages one listing shows; a longer one is for the database's own tools. */
const MOST_LIMIT = 10_000;
const STATES: readonly MessageState[] = ['pending', 'failed', 'delivered'];

const help = {
  messages: helpText(
    'plantstore webhook messages ID [--status pending|failed|delivered] [--limit N] [--json]',
    `Shows subscription ID's messages, newest first, ${DEFAULT_LIMIT} unless --limit (at most ${MOST_LIMIT}): the webhook-id the\n` +
      'receiver sees, the plant id, the status, the attempts since it was queued, when a pending one is\n' +
      'due next, and the last answer or error. Delivered and failed messages are kept for\n' +
      'WEBHOOK_RETENTION_MS. On SQLite a pending message gets its number, so its webhook-id, when first\n' +
      'claimed: until then it shows none. With --json: an array, one message a line.',
    STORE_SETTINGS,
  ),
  resend: helpText(
    'plantstore webhook resend ID --failed | plantstore webhook resend MESSAGE_ID',
    "Queues again every failed message of subscription ID, or one failed or delivered message named\n" +
      'by its webhook-id (msg_...). Each keeps its webhook-id, so receivers drop one they already took;\n' +
      'it is due at once and gets every retry again, for WEBHOOK_RETRY_FOR_MS. A pending message is\n' +
      'already queued and stays as it is. Prints how many were queued.',
    STORE_SETTINGS,
  ),
};

export async function messages(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, {
    options: { status: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } },
    settingNames: STORE_SETTINGS,
    positionals: 1,
  });
  if (values.help) return printHelp(context, help.messages);
  const id = subscriptionId(positionals[0], 'messages');
  const state = values.status;
  if (state !== undefined && !(STATES as readonly string[]).includes(state)) {
    throw new UsageError(`--status is one of ${STATES.join(', ')}, got ${JSON.stringify(state)}`);
  }
  const limit = values.limit === undefined ? DEFAULT_LIMIT : Number(values.limit);
  if (!/^\d+$/.test(values.limit ?? '1') || limit < 1 || limit > MOST_LIMIT) {
    throw new UsageError(`--limit is a whole number from 1 to ${MOST_LIMIT}, got ${JSON.stringify(values.limit)}`);
  }
  return withStore(values, context, async (store) => {
    const subscription = await activeSubscription(store.webhooks, id);
    const listed = await store.webhooks.listMessages({ subscriptionId: id, limit, ...(state === undefined ? {} : { state: state as MessageState }) });
    if (subscription.pausedAt !== null) context.stderr.write(`Webhook subscription ${id} is paused: its pending messages wait for webhook resume.\n`);
    if (values.json) {
      const lines = listed.map((message) => messageJson(subscription, message));
      context.stdout.write(`${terminalJson(lines.length === 0 ? '[]' : `[\n${lines.join(',\n')}\n]`)}\n`);
      return 0;
    }
    // A receiver's answer is its own words: shown escaped, one line a message.
    const table = [['MESSAGE ID', 'PLANT ID', 'STATUS', 'ATTEMPTS', 'NEXT ATTEMPT', 'LAST RESULT']].concat(
      listed.map((message) => [
        message.id === null ? '-' : webhookId(subscription.key, message.id),
        message.plantId.toString(),
        message.state,
        String(message.attempts),
        message.nextAttemptAt?.toISOString() ?? '-',
        message.lastResult === null ? '-' : terminalText(message.lastResult),
      ]),
    );
    writeTable(context, table);
    return 0;
  });
}

export async function resend(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, { options: { failed: { type: 'boolean' } }, settingNames: STORE_SETTINGS, positionals: 1 });
  if (values.help) return printHelp(context, help.resend);
  const named = positionals[0];
  if (named === undefined) throw new UsageError('webhook resend needs a subscription ID and --failed, or the webhook-id of one message');
  const message = named.startsWith('msg_') ? parseWebhookId(named) : undefined;
  if (named.startsWith('msg_') && (message === undefined || values.failed)) {
    throw new UsageError(message === undefined ? `${JSON.stringify(named)} is not the webhook-id of a message` : '--failed goes with a subscription ID, not a webhook-id');
  }
  if (message === undefined && !values.failed) throw new UsageError('webhook resend ID needs --failed; to resend one message, name it by its webhook-id (msg_...)');
  return withStore(values, context, async (store) => {
    const subscription =
      message === undefined
        ? await activeSubscription(store.webhooks, subscriptionId(named, 'resend'))
        : (await store.webhooks.activeSubscriptions()).find((active) => active.key === message.subscriptionKey);
    // The id is not repeated: it is the user's text, and its own line says which it was.
    if (subscription === undefined) throw new CommandFailed('no active webhook subscription sends that message');
    const { queued, pending } = await store.webhooks.resendMessages({ subscriptionId: subscription.id, ...(message === undefined ? {} : { messageId: message.messageId }) });
    if (message !== undefined && queued + pending === 0) throw new CommandFailed(`no message ${terminalText(named)}: pruned after WEBHOOK_RETENTION_MS, or never sent`);
    context.stdout.write(`queued: ${queued}\n`);
    const held = subscription.pausedAt === null ? 'due now' : 'held until webhook resume: the subscription is paused';
    context.stderr.write(
      pending > 0
        ? `${terminalText(named)} is pending already: it is queued as it is.\n`
        : `Queued ${queued} message${queued === 1 ? '' : 's'} of webhook subscription ${subscription.id} again, each under its own webhook-id, ${held}.\n`,
    );
    return 0;
  });
}

/** A message as one line of JSON, its plant id with every digit. */
function messageJson(subscription: Subscription, message: OutboxMessage): string {
  const rest = JSON.stringify({
    status: message.state,
    attempts: message.attempts,
    createdAt: message.createdAt.toISOString(),
    nextAttemptAt: message.nextAttemptAt?.toISOString() ?? null,
    finishedAt: message.finishedAt?.toISOString() ?? null,
    lastResult: message.lastResult,
  });
  const id = message.id === null ? null : webhookId(subscription.key, message.id);
  return `{"id":${JSON.stringify(id)},"plantId":${message.plantId.toString()},${rest.slice(1)}`;
}
