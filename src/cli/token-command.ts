import { STORE_SETTINGS } from '../config.js';
import type { TokenRecord } from '../store/store.js';
import { parseDuration } from '../tokens/duration.js';
import { issueToken } from '../tokens/issue-token.js';
import { type CommandContext, CommandFailed, helpText, parseCommandLine, runSubcommand, UsageError, withStore, writeTable } from './command-line.js';

const help = {
  create: helpText(
    'plantstore token create --name NAME [--expires-in DURATION]',
    'Creates an API token and prints it, alone, on stdout; it is shown only this once.\n' +
      'DURATION is a number and a unit: 90s, 15m, 12h, 30d, 2w. Without it the token does not expire.',
    STORE_SETTINGS,
  ),
  list: helpText('plantstore token list [--json]', 'Lists every token (never the token itself): id, name, status, dates.', STORE_SETTINGS),
  revoke: helpText(
    'plantstore token revoke ID_OR_NAME',
    'Revokes an active token; running servers refuse it within one second.',
    STORE_SETTINGS,
  ),
};

export const tokenHelp = helpText(
  'plantstore token <create|list|revoke> [options]',
  'Manages API tokens in the store named by DATABASE_URL, also while a server runs on it.\n' +
    'Run `plantstore token SUBCOMMAND --help` for the options of each.',
);

export function tokenCommand(argv: readonly string[], context: CommandContext): Promise<number> {
  return runSubcommand('token', { create: createToken, list: listTokens, revoke: revokeToken }, tokenHelp, argv, context);
}

async function createToken(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values } = parseCommandLine(argv, {
    options: { name: { type: 'string' }, 'expires-in': { type: 'string' } },
    settingNames: STORE_SETTINGS,
  });
  if (values.help) return printHelp(context, help.create);
  if (values.name === undefined) throw new UsageError('token create needs --name NAME');
  let expiresInMs: number | undefined;
  if (values['expires-in'] !== undefined) {
    expiresInMs = parseDuration(values['expires-in']);
    if (expiresInMs === undefined) {
      throw new UsageError(`--expires-in must be a duration such as 90s, 15m, 12h, 30d or 2w, got ${JSON.stringify(values['expires-in'])}`);
    }
  }
  return withStore(values, context, async (store) => {
    const result = await issueToken(store, expiresInMs === undefined ? { name: values.name! } : { name: values.name!, expiresInMs });
    if (!result.issued) {
      throw result.reason === 'invalid-name' ? new UsageError(result.problem) : new CommandFailed(result.problem);
    }
    context.stdout.write(`${result.token}\n`);
    const expiry = result.record.expiresAt === null ? 'does not expire' : `expires ${result.record.expiresAt.toISOString()}`;
    context.stderr.write(`Created token ${result.record.id} (${result.record.name}); it ${expiry}. Store it now: it is not shown again.\n`);
    return 0;
  }, { mayCreate: true });
}

async function listTokens(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values } = parseCommandLine(argv, { options: { json: { type: 'boolean' } }, settingNames: STORE_SETTINGS });
  if (values.help) return printHelp(context, help.list);
  return withStore(values, context, async (store) => {
    const now = new Date();
    const rows = (await store.listTokens()).map((token) => ({
      id: token.id,
      name: token.name,
      status: tokenStatus(token, now),
      createdAt: token.createdAt.toISOString(),
      expiresAt: token.expiresAt?.toISOString() ?? null,
      revokedAt: token.revokedAt?.toISOString() ?? null,
    }));
    if (values.json) {
      context.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
      return 0;
    }
    const table = [['ID', 'NAME', 'STATUS', 'CREATED', 'EXPIRES', 'REVOKED']].concat(
      rows.map((row) => [String(row.id), row.name, row.status, row.createdAt, row.expiresAt ?? '-', row.revokedAt ?? '-']),
    );
    writeTable(context, table);
    return 0;
  });
}

async function revokeToken(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, { options: {}, settingNames: STORE_SETTINGS, positionals: 1 });
  if (values.help) return printHelp(context, help.revoke);
  const target = positionals[0];
  if (target === undefined) throw new UsageError('token revoke needs the ID or NAME of a token');
  // Names start with a letter, so a number is always an id.
  const ref = /^\d+$/.test(target) ? { id: Number(target) } : { name: target };
  return withStore(values, context, async (store) => {
    const revoked = await store.revokeToken(ref, new Date());
    if (revoked === undefined) throw new CommandFailed(`no active token with ${'id' in ref ? 'id' : 'name'} ${JSON.stringify(target)}`);
    context.stderr.write(`Revoked token ${revoked.id} (${revoked.name}).\n`);
    return 0;
  });
}

function tokenStatus(token: TokenRecord, now: Date): 'active' | 'revoked' | 'expired' {
  if (token.revokedAt !== null) return 'revoked';
  if (token.expiresAt !== null && token.expiresAt <= now) return 'expired';
  return 'active';
}

function printHelp(context: CommandContext, text: string): number {
  context.stdout.write(text);
  return 0;
}
