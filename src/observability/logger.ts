import { createRequire } from 'node:module';
import { type Logger, pino, type LoggerOptions } from 'pino';
import type PinoPretty from 'pino-pretty';
import { loggerBindings, loggerStream } from './pino-internals.js';
import type { LogLevel } from '../config/config.js';

/** Nothing may log a token: the default serialisers never log headers, and the Authorization header is redacted besides. */
export function loggerOptions(level: LogLevel): LoggerOptions {
  return {
    level,
    redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization'], censor: '[redacted]' },
  };
}

const LOG_BUFFER_BYTES = 16_384;
/** Gathered lines wait at most this long, so that a quiet service's lines still appear promptly. */
const LOG_FLUSH_MS = 100;

/** Synchronous writes (pino's default): a slow log reader slows the service instead of filling its memory; `kill -9` loses at most LOG_FLUSH_MS of lines. */
export function createLogger(level: LogLevel) {
  if (process.stdout.isTTY) return pino(loggerOptions(level), prettyLines());
  return pino(loggerOptions(level), stdoutBlocks());
}

/** Loaded only for a terminal: a service writing JSON never runs pino-pretty. */
function prettyLines() {
  const pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
  return pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss.l' });
}

/**
 * Each line is encoded into the block as it comes: a string encoded only at the write is by then spread over memory.
 * The destination may keep a block it could not write whole (EAGAIN), so each block is new.
 */
class LineBlocks implements ByteLines {
  readonly #destination: ByteDestination;
  #block = Buffer.allocUnsafe(LOG_BUFFER_BYTES);
  #end = 0;

  constructor(destination: ByteDestination) {
    this.#destination = destination;
    setInterval(() => this.flushSync(), LOG_FLUSH_MS).unref();
  }

  /** A UTF-16 unit is at most 3 bytes of UTF-8. */
  write(line: string): boolean {
    const block = this.room(3 * line.length);
    this.#end += block.write(line, this.#end, 'utf8');
    return true;
  }

  room(bytes: number): Buffer {
    if (this.#end + bytes > this.#block.length) {
      this.flushSync();
      // Longer than a block (a long error's stack, say): a block of its own, written with the next line or flush.
      if (bytes > this.#block.length) this.#block = Buffer.allocUnsafe(bytes);
    }
    return this.#block;
  }

  get end(): number {
    return this.#end;
  }

  commit(bytes: number): void {
    this.#end += bytes;
  }

  flushSync(): void {
    if (this.#end === 0) return;
    const written = this.#block.subarray(0, this.#end);
    this.#block = Buffer.allocUnsafe(LOG_BUFFER_BYTES);
    this.#end = 0;
    this.#destination.write(written);
  }
}

/** Where JSON lines are written as bytes, for a writer that assembles its line in place (access-line.ts). */
export interface ByteLines {
  /** The buffer to write the next line into, with at least `bytes` free from `end`. */
  room(bytes: number): Buffer;
  readonly end: number;
  /** Marks `bytes` more of it, from `end`, as a written line. */
  commit(bytes: number): void;
}

/** pino's destination in contentMode 'buffer' (its type names only strings). */
interface ByteDestination {
  write(bytes: Buffer): boolean;
}

let blocks: LineBlocks | undefined;

/** Shared by every logger, so lines stay in order; pino flushes only asynchronous destinations at exit, so this one flushes its own. */
function stdoutBlocks(): LineBlocks {
  if (blocks === undefined) {
    const destination = pino.destination({ dest: 1, sync: true, contentMode: 'buffer' }) as unknown as ByteDestination;
    const lines = new LineBlocks(destination);
    process.once('exit', () => {
      try {
        lines.flushSync();
      } catch {
        // stdout is closed or broken: there is nowhere left to write.
      }
    });
    blocks = lines;
  }
  return blocks;
}

/** Where `logger` writes JSON lines, with its bindings as pino serialised them, for the access line; undefined for a terminal's pretty lines. */
export function jsonLines(logger: Logger): { lines: ByteLines; bindings: string } | undefined {
  if (blocks === undefined || loggerStream(logger) !== blocks) return undefined;
  return { lines: blocks, bindings: loggerBindings(logger) };
}
