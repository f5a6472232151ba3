import type { Subscription, WebhookStore } from '../store/webhook-store.js';
import { type CommandContext, CommandFailed, UsageError } from './command-line.js';

/** The ID argument of a webhook subcommand: a subscription's number. */
export function subscriptionId(text: string | undefined, subcommand: string): number {
  if (text === undefined) throw new UsageError(`webhook ${subcommand} needs the ID of a subscription`);
  if (!/^\d{1,15}$/.test(text)) throw new UsageError(`a subscription ID is a whole number, got ${JSON.stringify(text)}`);
  return Number(text);
}

/** The active subscription with this id, secrets and all; a CommandFailed when there is none. */
export async function activeSubscription(store: WebhookStore, id: number): Promise<Subscription> {
  const found = (await store.activeSubscriptions()).find((subscription) => subscription.id === id);
  if (found === undefined) throw new CommandFailed(`no webhook subscription with id ${id}`);
  return found;
}

export function printHelp(context: CommandContext, text: string): number {
  context.stdout.write(text);
  return 0;
}
