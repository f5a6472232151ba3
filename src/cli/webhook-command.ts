import { helpText, type CommandContext, runSubcommand } from './command-line.js';
import { ping, pause, resume } from './webhook-delivery-commands.js';
import { messages, resend } from './webhook-message-commands.js';
import { add, list, remove, rotate, update } from './webhook-subscription-commands.js';

export const webhookHelp = helpText(
  'plantstore webhook <add|list|update|remove|rotate-secret|messages|resend|pause|resume|ping> [options]',
  'Manages webhook subscriptions in the store named by DATABASE_URL, also while servers run on it:\n' +
    '  add, list, update, remove, rotate-secret   the subscriptions\n' +
    '  messages, resend                            a subscription\'s messages: show them, queue them again\n' +
    '  pause, resume, ping                         hold deliveries back, let them go, try the receiver\n' +
    'Run `plantstore webhook SUBCOMMAND --help` for the options of each; docs/webhooks.md for deliveries.',
);

export function webhookCommand(argv: readonly string[], context: CommandContext): Promise<number> {
  return runSubcommand(
    'webhook',
    { add, list, update, remove, 'rotate-secret': rotate, messages, resend, pause, resume, ping },
    webhookHelp,
    argv,
    context,
  );
}
