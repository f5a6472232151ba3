import { type Logger, pino } from 'pino';

/**
 * What the access line relies on of pino beyond its documented API, in one
 * place: the level number it writes, where a logger writes, and its
 * bindings as it serialised them. test/observability/pino-internals.test.ts
 * fails, naming the symbol, on a pino release without one, and
 * test/observability/access-line.test.ts holds the lines equal to pino's own.
 */

/** pino's number for the info level (`pino.levels.values.info`), the access line's. */
export const INFO = 30;

/** The destination a logger writes to (pino.symbols.streamSym). */
export function loggerStream(logger: Logger): unknown {
  return (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym];
}

/** A logger's bindings as pino serialised them, `,"pid":…,"hostname":…` (pino.symbols.chindingsSym). */
export function loggerBindings(logger: Logger): string {
  return (logger as unknown as Record<symbol, string | undefined>)[pino.symbols.chindingsSym] ?? '';
}
