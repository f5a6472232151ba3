import { type Logger, pino } from 'pino';

// What the access line relies on of pino beyond its documented API: test/observability/pino-internals.test.ts fails on a release without one.

/** pino's number for the info level (`pino.levels.values.info`), the access line's. */
export const INFO = 30;

export function loggerStream(logger: Logger): unknown {
  return (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym];
}

/** A logger's bindings as pino serialised them, `,"pid":…,"hostname":…` (pino.symbols.chindingsSym). */
export function loggerBindings(logger: Logger): string {
  return (logger as unknown as Record<symbol, string | undefined>)[pino.symbols.chindingsSym] ?? '';
}
