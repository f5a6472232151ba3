import { pino, type LoggerOptions } from 'pino';
import type { LogLevel } from './config.js';

/**
 * How every log line is written: JSON on stdout, one object a line (pino).
 * Nothing may log a token; the default serialisers never log headers, and
 * the Authorization header is redacted as a second line of defence.
 */
export function loggerOptions(level: LogLevel): LoggerOptions {
  return {
    level,
    redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization'], censor: '[redacted]' },
  };
}

export function createLogger(level: LogLevel) {
  return pino(loggerOptions(level));
}
