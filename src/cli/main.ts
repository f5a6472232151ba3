import { ConfigError } from '../config.js';
import { ServiceError } from '../errors.js';
import { unsupportedNodeLine } from '../node-lines.js';
import { type CommandContext, CommandFailed, EXIT, UsageError } from './command-line.js';
import { configCommand } from './config-command.js';
import { copyCommand } from './copy-command.js';
import { plantsCommand } from './plants-command.js';
import { serveCommand } from './serve-command.js';
import { tokenCommand } from './token-command.js';
import { webhookCommand } from './webhook-command.js';

const usage = `Usage: plantstore <command> [options]

The plant store service and its administration.

Commands:
  serve                     run the HTTP server (npm start runs this)
  token create --name NAME  create an API token and print it on stdout
  token list [--json]       list tokens
  token revoke ID_OR_NAME   revoke a token
  token rotate NAME         give a token a new secret; the old one works for a grace (24h by default)
  webhook add URL           subscribe a URL to every new plant; prints its signing secret
  webhook list [--json]     list webhook subscriptions with their backlog and errors
  webhook remove ID         stop deliveries to a subscription
  webhook rotate-secret ID  make a new signing secret (the old one signs too for 24 hours)
  plants export             print every plant, one JSON object a line
  copy --from URL --to URL  copy every token and plant to another store
  config [--json]           print the effective settings, secrets masked

Run \`plantstore <command> --help\` for a command's options and settings.
`;

/** Runs one command line and resolves its exit code: 0 done, 1 failed, 2 used wrongly. */
export async function main(argv: readonly string[], context: CommandContext = processContext()): Promise<number> {
  const [command, ...rest] = argv;
  // Before anything loads the SQLite driver, which may abort the process on a line it was not built for.
  const unsupported = unsupportedNodeLine(context.nodeVersion);
  if (unsupported !== undefined) {
    context.stderr.write(`plantstore: ${unsupported}\n`);
    return EXIT.failed;
  }
  try {
    switch (command) {
      case 'serve':
        return await serveCommand(rest, context);
      case 'token':
        return await tokenCommand(rest, context);
      case 'webhook':
        return await webhookCommand(rest, context);
      case 'plants':
        return await plantsCommand(rest, context);
      case 'copy':
        return await copyCommand(rest, context);
      case 'config':
        return await configCommand(rest, context);
      case 'help':
      case '--help':
      case '-h':
        context.stdout.write(usage);
        return EXIT.ok;
      case undefined:
        context.stderr.write(usage);
        return EXIT.usage;
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}; run plantstore --help`);
    }
  } catch (error) {
    return report(error, context);
  }
}

function report(error: unknown, context: CommandContext): number {
  if (error instanceof UsageError || error instanceof ConfigError) {
    context.stderr.write(`plantstore: ${error.message}\n`);
    return EXIT.usage;
  }
  if (error instanceof CommandFailed) {
    context.stderr.write(`plantstore: ${error.message}\n`);
    return EXIT.failed;
  }
  if (error instanceof ServiceError) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
    context.stderr.write(`plantstore: ${error.message}${cause}\n`);
    return EXIT.failed;
  }
  context.stderr.write(`plantstore: ${error instanceof Error ? error.message : String(error)}\n`);
  return EXIT.failed;
}

function processContext(): CommandContext {
  return { env: process.env, stdout: process.stdout, stderr: process.stderr, nodeVersion: process.versions.node };
}
