import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, LogFn } from 'pino';

/**
 * A request's logger (`request.log`), with its request id bound, made only
 * when the request logs something. Fastify makes a pino child per request;
 * most requests log nothing but their access line, which is written without
 * a logger (see request-completed.ts), so a child made for every request
 * would be work for nothing. A line logged here is the child's: same level,
 * same bindings, same destination.
 */
class RequestLogger implements FastifyBaseLogger {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #child: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  get #logger(): FastifyBaseLogger {
    return (this.#child ??= this.#parent.child(this.#bindings, this.#options));
  }

  get level(): string {
    return this.#child?.level ?? this.#options.level ?? this.#parent.level;
  }

  set level(level: string) {
    this.#logger.level = level;
  }

  // Methods on the prototype, not arrow fields: nothing is allocated per request but the object itself.
  fatal(...args: Parameters<LogFn>): void {
    this.#logger.fatal(...args);
  }
  error(...args: Parameters<LogFn>): void {
    this.#logger.error(...args);
  }
  warn(...args: Parameters<LogFn>): void {
    this.#logger.warn(...args);
  }
  info(...args: Parameters<LogFn>): void {
    this.#logger.info(...args);
  }
  debug(...args: Parameters<LogFn>): void {
    this.#logger.debug(...args);
  }
  trace(...args: Parameters<LogFn>): void {
    this.#logger.trace(...args);
  }
  silent(...args: Parameters<LogFn>): void {
    this.#logger.silent(...args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#logger.child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: a request logger that costs nothing until it logs. */
export function requestLogger(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new RequestLogger(parent, bindings, options);
}
