import { loadSettings, STORE_SETTINGS } from '../config/config.js';
import type { Subscription } from '../store/webhook-store.js';
import { pingSubscription } from '../webhooks/ping.js';
import { type CommandContext, CommandFailed, EXIT, helpText, parseCommandLine, withStore } from './command-line.js';
import { terminalText } from './terminal-text.js';
import { activeSubscription, printHelp, subscriptionId } from './webhook-arguments.js';

/* The webhook subcommands that hold deliveries back, let them go, and try a receiver. */

const PING_SETTINGS = [...STORE_SETTINGS, 'webhookTimeoutMs'] as const;

const help = {
  pause: helpText(
    'plantstore webhook pause ID',
    'Holds back deliveries to subscription ID: messages are still written for every new plant, and\n' +
      'kept, but no attempt starts once the command returns (one under way may still arrive). The backlog\n' +
      'grows until webhook resume; webhook list shows the subscription as paused.',
    STORE_SETTINGS,
  ),
  resume: helpText(
    'plantstore webhook resume ID',
    "Lets a paused subscription's messages go: running servers send them at their next look at the\n" +
      'outbox (every WEBHOOK_POLL_MS). Each pending message gets its whole retry window again, from now.',
    STORE_SETTINGS,
  ),
  ping: helpText(
    'plantstore webhook ping ID',
    "Posts one webhook.ping event to subscription ID's URL now, signed and sent as deliveries are,\n" +
      "and prints the receiver's answer and how long it took. Exit 1 unless the answer is a 2xx.\n" +
      'It goes straight from this command, not through the outbox: it is neither stored nor retried,\n' +
      'and a paused subscription is pinged too.',
    PING_SETTINGS,
  ),
};

export function pause(argv: readonly string[], context: CommandContext): Promise<number> {
  return setPaused(argv, context, true);
}

export function resume(argv: readonly string[], context: CommandContext): Promise<number> {
  return setPaused(argv, context, false);
}

async function setPaused(argv: readonly string[], context: CommandContext, paused: boolean): Promise<number> {
  const subcommand = paused ? 'pause' : 'resume';
  const { values, positionals } = parseCommandLine(argv, { options: {}, settingNames: STORE_SETTINGS, positionals: 1 });
  if (values.help) return printHelp(context, help[subcommand]);
  const id = subscriptionId(positionals[0], subcommand);
  return withStore(values, context, async (store) => {
    const changed = await store.webhooks.setPaused(id, paused);
    if (changed === undefined) throw new CommandFailed(`no webhook subscription with id ${id}`);
    const pending = (await store.webhooks.listSubscriptions()).find((subscription) => subscription.id === id)?.pending ?? 0;
    const messages = `${pending} pending message${pending === 1 ? '' : 's'}`;
    if (!changed) context.stderr.write(`Webhook subscription ${id} was already ${paused ? 'paused' : 'active'}; ${messages}.\n`);
    else if (paused) context.stderr.write(`Paused webhook subscription ${id}: new messages are kept, none is sent until webhook resume; ${messages}.\n`);
    else context.stderr.write(`Resumed webhook subscription ${id}: its ${messages} go out at running servers' next look at the outbox.\n`);
    return 0;
  });
}

export async function ping(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, { options: {}, settingNames: PING_SETTINGS, positionals: 1 });
  if (values.help) return printHelp(context, help.ping);
  const id = subscriptionId(positionals[0], 'ping');
  const { webhookTimeoutMs } = loadSettings(['webhookTimeoutMs'], { env: context.env, flags: values as Record<string, string | undefined> });
  // The store is closed before the ping: it is not needed while the receiver takes its time.
  let subscription: Subscription | undefined;
  await withStore(values, context, async (store) => {
    subscription = await activeSubscription(store.webhooks, id);
    return EXIT.ok;
  });
  const { webhookId, result, durationMs } = await pingSubscription(subscription!, webhookTimeoutMs);
  const took = `${Math.round(durationMs)} ms`;
  // A receiver's answer is its own words: shown escaped.
  context.stdout.write(`${result.delivered ? `HTTP ${result.status}` : terminalText(result.error)} in ${took}\n`);
  context.stderr.write(`${result.delivered ? 'The receiver accepted' : 'The receiver did not accept'} the ping ${webhookId} to ${terminalText(subscription!.url)}.\n`);
  return result.delivered ? EXIT.ok : EXIT.failed;
}
