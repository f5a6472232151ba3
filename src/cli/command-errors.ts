/** A command used wrongly: one line on stderr, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** A command that ran but could not do what was asked: one line on stderr, exit code 1. */
export class CommandFailed extends Error {
  override name = 'CommandFailed';
}

export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;
