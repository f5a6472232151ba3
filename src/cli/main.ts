import { checkNodeLine } from '../node-lines.js';
import { type CommandContext, EXIT, helpText, type ParentChannel, parseCommandLine, type Subcommand, UsageError } from './command-line.js';
import { VERSION } from '../version.js';
import { describeFailure } from './failure.js';
import { terminalText } from './terminal-text.js';

const usage = `Usage: plantstore <command> [options]

The plant store service and its administration.

Commands:
  serve                     run the HTTP server (npm start runs this) and a webhook deliverer
  deliver                   deliver webhooks only; run any number, beside serve or apart
  token create --name NAME  create an API token and print it on stdout
  token list [--json]       list tokens
  token revoke ID_OR_NAME   revoke a token
  token rotate NAME         give a token a new secret; the old one works for a grace (24h by default)
  token update NAME --rate-limit N/DURATION  give a token its own rate limit (--no-rate-limit: RATE_LIMIT's)
  webhook add URL           subscribe a URL to every new plant; prints its signing secret
  webhook list [--json]     list webhook subscriptions with their backlog and errors
  webhook remove ID         stop deliveries to a subscription
  webhook rotate-secret ID  make a new signing secret (the old one signs too for 24 hours)
  webhook update ID --url URL  move a subscription to another URL
  webhook messages ID       show a subscription's messages, newest first
  webhook resend ID --failed  queue its failed messages again (or one: resend MESSAGE_ID)
  webhook pause|resume ID   hold a subscription's deliveries back, let them go
  webhook ping ID           post a signed test event to a subscription now
  plants export             print every plant, one JSON object a line
  plants import FILE|-      store the plants of an export; writes no webhook messages
  copy --from URL --to URL  copy every token and plant to another store
  backup FILE               write a consistent copy of the SQLite store to FILE, while servers run
  restore FILE              put a backup in place of the SQLite store; servers stopped
  config [--json]           print the effective settings, secrets masked
  schema [--json]           show the store's schema version and what this build would migrate
  version                   print this build's version (also --version)

Commands that use a store name it on stderr. All but serve, token create,
plants import, copy --to and restore refuse a store that does not exist, and create nothing.
Run \`plantstore help <command>\` or \`plantstore <command> --help\` for its options and settings.
`;

/** Every command by its name, each loaded when it runs: `token create` need not load the HTTP server, nor `version` anything. */
const commands: Readonly<Record<string, () => Promise<Subcommand>>> = {
  serve: async () => (await import('./serve-command.js')).serveCommand,
  deliver: async () => (await import('./deliver-command.js')).deliverCommand,
  token: async () => (await import('./token-command.js')).tokenCommand,
  webhook: async () => (await import('./webhook-command.js')).webhookCommand,
  plants: async () => (await import('./plants-command.js')).plantsCommand,
  copy: async () => (await import('./copy-command.js')).copyCommand,
  backup: async () => (await import('./backup-command.js')).backupCommand,
  restore: async () => (await import('./restore-command.js')).restoreCommand,
  config: async () => (await import('./config-command.js')).configCommand,
  schema: async () => (await import('./schema-command.js')).schemaCommand,
  version: async () => versionCommand,
};

/** Runs one command line and resolves its exit code: 0 done, 1 failed, 2 used wrongly. */
export async function main(argv: readonly string[], context: CommandContext = processContext()): Promise<number> {
  const [command, ...rest] = argv;
  // Before any command loads what an older Node.js cannot run, or opens a store.
  const nodeLine = checkNodeLine(context.nodeVersion);
  if (nodeLine !== undefined && 'refuse' in nodeLine) {
    context.stderr.write(`plantstore: ${nodeLine.refuse}\n`);
    return EXIT.failed;
  }
  // serve says it once for all its workers (serve-command.ts).
  if (nodeLine !== undefined && command !== 'serve') context.stderr.write(`plantstore: warning: ${nodeLine.warn}\n`);
  try {
    switch (command) {
      case undefined:
        context.stderr.write(usage);
        return EXIT.usage;
      case '--help':
      case '-h':
        context.stdout.write(usage);
        return EXIT.ok;
      case 'help':
        return await help(rest, context);
      case '--version':
        return await versionCommand(rest, context);
      default:
        return await commandNamed(command)(rest, context);
    }
  } catch (error) {
    const { message, exitCode } = describeFailure(error);
    // A message may quote a store, a driver or a server: whatever it holds is shown, not obeyed.
    context.stderr.write(`plantstore: ${terminalText(message)}\n`);
    return exitCode;
  }
}

function commandNamed(name: string): Subcommand {
  const load = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (load === undefined) throw new UsageError(`unknown command ${JSON.stringify(name)}; run plantstore --help`);
  return async (argv, context) => (await load())(argv, context);
}

/** `plantstore help [COMMAND [SUBCOMMAND]]`: the usage, or that command's own --help. */
function help([command, ...rest]: readonly string[], context: CommandContext): Promise<number> {
  if (command === undefined || command === 'help') {
    context.stdout.write(usage);
    return Promise.resolve(EXIT.ok);
  }
  return commandNamed(command)([...rest, '--help'], context);
}

function processContext(): CommandContext {
  return {
    env: process.env,
    // Read only when a command asks: making process.stdin opens a handle on it, which `serve` has no use for.
    get stdin() {
      return process.stdin;
    },
    stdout: process.stdout,
    stderr: process.stderr,
    nodeVersion: process.versions.node,
    parent: process.send === undefined ? undefined : (process as NodeJS.Process & ParentChannel),
  };
}

export const versionHelp = helpText('plantstore version (or plantstore --version)', "Prints this build's version, alone, on stdout.");

export async function versionCommand(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values } = parseCommandLine(argv, { options: {} });
  context.stdout.write(values.help ? versionHelp : `${VERSION}\n`);
  return 0;
}
