import { ConfigError } from '../config/config.js';
import { ServiceError } from '../errors.js';
import { CommandFailed, EXIT, UsageError } from './command-errors.js';

/** How a command that threw ends: the one line for stderr (without the `plantstore: ` prefix) and the exit code. */
export interface Failure {
  message: string;
  exitCode: number;
}

/** A command's error as one line and an exit code: 2 for a command used wrongly or a wrong setting, 1 otherwise; never a stack. */
export function describeFailure(error: unknown): Failure {
  if (error instanceof UsageError || error instanceof ConfigError) return { message: error.message, exitCode: EXIT.usage };
  if (error instanceof CommandFailed) return { message: error.message, exitCode: EXIT.failed };
  if (error instanceof ServiceError) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
    return { message: `${error.message}${cause}`, exitCode: EXIT.failed };
  }
  const message = error instanceof Error ? error.message : String(error);
  // A message of several lines (a driver's, a system call's) would not read as one line.
  return { message: message.split('\n')[0]!, exitCode: EXIT.failed };
}
