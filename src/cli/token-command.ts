import { STORE_SETTINGS } from '../config/config.js';
import { parseRatePolicy, RATE_POLICY_SHAPE } from '../rate-limits/rate-policy.js';
import type { TokenRecord } from '../store/store.js';
import { tokenNameProblem } from '../tokens/api-token.js';
import { parseDuration, parseGrace as parseGraceText } from '../tokens/duration.js';
import { issueToken } from '../tokens/issue-token.js';
import { DEFAULT_ROTATION_GRACE_MS, rotateToken } from '../tokens/rotate-token.js';
import { TOKEN_USE_WRITE_INTERVAL_MS } from '../tokens/token-use-writer.js';
import { type CommandContext, CommandFailed, helpText, parseCommandLine, runSubcommand, UsageError, withStore, writeTable } from './command-line.js';
import { terminalJson, terminalText } from './terminal-text.js';

const DURATIONS = 'DURATION is a number and a unit: 90s, 15m, 12h, 30d, 2w.';
const RATE_LIMITS = `--rate-limit N/DURATION (600/1m; s, m or h) gives the token its own policy; without\nit the token is under the server's RATE_LIMIT.`;

const help = {
  create: helpText(
    'plantstore token create --name NAME [--expires-in DURATION] [--rate-limit N/DURATION] [--replace]',
    'Creates an API token and prints it, alone, on stdout; it is shown only this once.\n' +
      `${DURATIONS} Without it the token does not expire.\n` +
      `${RATE_LIMITS}\n` +
      'A name held by an active token is refused; with --replace, the tokens of that name are\n' +
      'revoked and the new one takes their place, so a script can run again.',
    STORE_SETTINGS,
  ),
  list: helpText(
    'plantstore token list [--json]',
    'Lists every token (never the token itself): id, name, status (active, retiring, revoked,\n' +
      'expired), rate limit (default: under the server\'s RATE_LIMIT), dates, and its last use:\n' +
      `servers write uses every ${TOKEN_USE_WRITE_INTERVAL_MS / 1000} seconds and as they stop.\n` +
      'JWT clients have no token here: their requests are in the access log.',
    STORE_SETTINGS,
  ),
  revoke: helpText(
    'plantstore token revoke ID_OR_NAME',
    'Revokes a token; running servers refuse it within one second. By name, the active token and\n' +
      'any still retiring after a rotation; by id, one token, which ends a retiring one\'s grace early.',
    STORE_SETTINGS,
  ),
  rotate: helpText(
    'plantstore token rotate NAME [--grace DURATION] [--expires-in DURATION]',
    'Gives the active token NAME a new secret: prints the new token, alone, on stdout. The old one\n' +
      'goes on working (status retiring) for the grace, 24h by default, 0 to stop it at once, so its\n' +
      'clients can be switched with no downtime; stderr says until when.\n' +
      `${DURATIONS}\nWithout --expires-in the new token lives as long as the old one was made to.\n` +
      'The new token keeps the old one\'s rate limit.',
    STORE_SETTINGS,
  ),
  update: helpText(
    'plantstore token update NAME (--rate-limit N/DURATION | --no-rate-limit)',
    'Sets the rate limit of the tokens NAME that still work (active, or retiring after a rotation).\n' +
      '--rate-limit N/DURATION (600/1m; s, m or h) gives them their own policy; --no-rate-limit\n' +
      'puts them back under the server\'s RATE_LIMIT. Running servers apply it within one second.',
    STORE_SETTINGS,
  ),
};

export const tokenHelp = helpText(
  'plantstore token <create|list|revoke|rotate|update> [options]',
  'Manages API tokens in the store named by DATABASE_URL, also while a server runs on it.\n' +
    'Run `plantstore token SUBCOMMAND --help` for the options of each.',
);

export function tokenCommand(argv: readonly string[], context: CommandContext): Promise<number> {
  return runSubcommand('token', { create: createToken, list: listTokens, revoke: revokeToken, rotate: rotate, update: updateToken }, tokenHelp, argv, context);
}

async function createToken(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values } = parseCommandLine(argv, {
    options: { name: { type: 'string' }, 'expires-in': { type: 'string' }, 'rate-limit': { type: 'string' }, replace: { type: 'boolean' } },
    settingNames: STORE_SETTINGS,
  });
  if (values.help) return printHelp(context, help.create);
  if (values.name === undefined) throw new UsageError('token create needs --name NAME');
  const name = checkedName(values.name);
  const expiresInMs = optionalDuration('--expires-in', values['expires-in']);
  const rateLimit = values['rate-limit'] === undefined ? undefined : rateLimitText(values['rate-limit']);
  return withStore(values, context, async (store) => {
    const result = await issueToken(store, {
      name,
      replace: values.replace === true,
      ...(expiresInMs === undefined ? {} : { expiresInMs }),
      ...(rateLimit === undefined ? {} : { rateLimit }),
    });
    if (!result.issued) {
      throw result.reason === 'invalid-name' ? new UsageError(result.problem) : new CommandFailed(result.problem);
    }
    context.stdout.write(`${result.token}\n`);
    reportIssued(context, result.revoked, result.record);
    return 0;
  }, { mayCreate: true });
}

async function rotate(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, {
    options: { grace: { type: 'string' }, 'expires-in': { type: 'string' } },
    settingNames: STORE_SETTINGS,
    positionals: 1,
  });
  if (values.help) return printHelp(context, help.rotate);
  if (positionals[0] === undefined) throw new UsageError('token rotate needs the NAME of a token');
  const name = checkedName(positionals[0]);
  const graceMs = parseGrace(values.grace);
  const expiresInMs = optionalDuration('--expires-in', values['expires-in']);
  return withStore(values, context, async (store) => {
    const result = await rotateToken(store, { name, graceMs, ...(expiresInMs === undefined ? {} : { expiresInMs }) });
    if (!result.rotated) {
      throw result.reason === 'invalid-name' ? new UsageError(result.problem) : new CommandFailed(result.problem);
    }
    context.stdout.write(`${result.token}\n`);
    reportIssued(context, result.retiring, result.record);
    return 0;
  });
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
      rateLimit: token.rateLimit,
      createdAt: token.createdAt.toISOString(),
      expiresAt: token.expiresAt?.toISOString() ?? null,
      revokedAt: token.revokedAt?.toISOString() ?? null,
      lastUsedAt: token.lastUsedAt?.toISOString() ?? null,
    }));
    if (values.json) {
      context.stdout.write(`${terminalJson(JSON.stringify(rows, null, 2))}\n`);
      return 0;
    }
    const table = [['ID', 'NAME', 'STATUS', 'RATE LIMIT', 'CREATED', 'EXPIRES', 'REVOKED', 'LAST USED']].concat(
      // A name or rate limit is checked when it is written, but a store copied from elsewhere holds whatever that one did.
      rows.map((row) => [
        String(row.id),
        terminalText(row.name),
        row.status,
        row.rateLimit === null ? 'default' : terminalText(row.rateLimit),
        row.createdAt,
        row.expiresAt ?? '-',
        row.revokedAt ?? '-',
        row.lastUsedAt ?? '-',
      ]),
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
    if (revoked.length === 0) throw new CommandFailed(`no active token with ${'id' in ref ? 'id' : 'name'} ${JSON.stringify(target)}`);
    for (const token of revoked) context.stderr.write(`Revoked token ${token.id} (${terminalText(token.name)}).\n`);
    return 0;
  });
}

async function updateToken(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, {
    options: { 'rate-limit': { type: 'string' }, 'no-rate-limit': { type: 'boolean' } },
    settingNames: STORE_SETTINGS,
    positionals: 1,
  });
  if (values.help) return printHelp(context, help.update);
  if (positionals[0] === undefined) throw new UsageError('token update needs the NAME of a token');
  const name = checkedName(positionals[0]);
  const cleared = values['no-rate-limit'] === true;
  if (cleared && values['rate-limit'] !== undefined) throw new UsageError('token update takes --rate-limit or --no-rate-limit, not both');
  if (!cleared && values['rate-limit'] === undefined) throw new UsageError('token update needs --rate-limit N/DURATION or --no-rate-limit');
  const rateLimit = cleared ? null : rateLimitText(values['rate-limit']!);
  return withStore(values, context, async (store) => {
    const updated = await store.setTokenRateLimit(name, rateLimit);
    if (updated.length === 0) throw new CommandFailed(`no active token named ${JSON.stringify(name)} to update; create one with token create`);
    for (const token of updated) {
      const policy = token.rateLimit === null ? "the server's RATE_LIMIT" : `its own rate limit ${terminalText(token.rateLimit)}`;
      context.stderr.write(`Token ${token.id} (${terminalText(token.name)}) is now under ${policy}.\n`);
    }
    // Servers look a token up again once TOKEN_CACHE_TTL_MS (at most 1000 ms) has passed.
    context.stderr.write('Running servers apply it within one second.\n');
    return 0;
  });
}

/** What became of the tokens a new one replaced, then the new one's id and expiry: all on stderr, so stdout holds the token alone. */
function reportIssued(context: CommandContext, replaced: readonly TokenRecord[], record: TokenRecord): void {
  for (const old of replaced) {
    context.stderr.write(
      old.revokedAt! <= record.createdAt
        ? `Revoked token ${old.id} (${terminalText(old.name)}).\n`
        : `Token ${old.id} (${terminalText(old.name)}) works until ${old.revokedAt!.toISOString()}, then is revoked.\n`,
    );
  }
  const expiry = record.expiresAt === null ? 'does not expire' : `expires ${record.expiresAt.toISOString()}`;
  context.stderr.write(`Created token ${record.id} (${terminalText(record.name)}); it ${expiry}. Store it now: it is not shown again.\n`);
}

/** A name fit for a token, checked before the store is opened. */
function checkedName(name: string): string {
  const problem = tokenNameProblem(name);
  if (problem !== undefined) throw new UsageError(problem);
  return name;
}

function optionalDuration(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const milliseconds = parseDuration(text);
  if (milliseconds === undefined) throw new UsageError(`${flag} must be a duration such as 90s, 15m, 12h, 30d or 2w, got ${JSON.stringify(text)}`);
  return milliseconds;
}

/** A --rate-limit value as the canonical text the store keeps, checked before the store is opened. */
function rateLimitText(text: string): string {
  const policy = parseRatePolicy(text, 'token');
  if (policy === undefined) throw new UsageError(`--rate-limit must be ${RATE_POLICY_SHAPE}, got ${JSON.stringify(text)}`);
  return policy.text;
}

/** --grace: a duration, or 0 for none. */
function parseGrace(text: string | undefined): number {
  if (text === undefined) return DEFAULT_ROTATION_GRACE_MS;
  const milliseconds = parseGraceText(text);
  if (milliseconds === undefined) throw new UsageError(`--grace must be 0 or a duration such as 90s, 15m, 12h, 30d or 2w, got ${JSON.stringify(text)}`);
  return milliseconds;
}

function printHelp(context: CommandContext, text: string): number {
  context.stdout.write(text);
  return 0;
}

/** `retiring`: a rotation's grace lets it work until its `revokedAt`. */
export type TokenStatus = 'active' | 'retiring' | 'revoked' | 'expired';

export function tokenStatus(token: TokenRecord, now: Date): TokenStatus {
  if (token.revokedAt !== null && token.revokedAt <= now) return 'revoked';
  if (token.expiresAt !== null && token.expiresAt <= now) return 'expired';
  return token.revokedAt === null ? 'active' : 'retiring';
}
