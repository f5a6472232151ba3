import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, LogFn } from 'pino';

/** `request.log`, whose pino child is made only when the request logs: most log nothing but the access line, written without a logger. */
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
