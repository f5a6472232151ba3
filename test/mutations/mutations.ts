/**
 * Deliberate bugs, each breaking one promise the service makes, and the
 * tests that must catch it. `npm run test:mutations` applies each to a
 * scratch copy of the project, rebuilds it, runs its tests, and fails when
 * one survives: a test that would pass with the promise broken does not
 * guard it.
 */
export interface Mutation {
  /** A short name, for `--only`. */
  name: string;
  /** The promise it breaks. */
  promise: string;
  /** The file changed, from the project's root. */
  file: string;
  /** The text replaced, which occurs exactly once in the file. */
  from: string;
  to: string;
  /**
   * The test files that guard the promise, and the names of their tests to run (a --test-name-pattern), when not all.
   * Files under test/system/ run in npm run test:system only; every mutation here is caught by npm test too.
   */
  tests: readonly string[];
  pattern?: string;
}

export const MUTATIONS: readonly Mutation[] = [
  {
    name: 'replay-ignores-tag',
    promise: 'A stored id with another tag is a 409 conflict, not a replay',
    file: 'src/plants/plant.ts',
    from: 'return a.name === b.name && a.tag === b.tag;',
    to: 'return a.name === b.name;',
    tests: ['test/http/create-plant.test.ts'],
  },
  {
    name: 'int64-digits',
    promise: 'An id beyond 2^53 is stored and answered with every digit',
    file: 'src/store/sqlite/plant-batch.ts',
    from: 'this.#statements.insert.run(plant.id, plant.name',
    to: 'this.#statements.insert.run(Number(plant.id), plant.name',
    tests: ['test/store/durability.test.ts'],
    pattern: 'kill -9',
  },
  {
    name: 'invalid-token-challenge',
    promise: 'A refused token is answered with the RFC 6750 challenge error="invalid_token"',
    file: 'src/errors.ts',
    from: `'Bearer realm="plantstore", error="invalid_token"'`,
    to: `'Bearer realm="plantstore"'`,
    tests: ['test/http/authentication.test.ts'],
  },
  {
    name: 'revocation-ignored',
    promise: 'A revoked token is refused',
    file: 'src/tokens/store-token-verifier.ts',
    from: "if (record.revokedAt !== null && record.revokedAt.getTime() <= now) return { valid: false, reason: 'revoked' };",
    to: '',
    tests: ['test/tokens/token-cache.test.ts'],
    pattern: 'revocation',
  },
  {
    name: 'signed-content',
    promise: 'A delivery is signed over <webhook-id>.<webhook-timestamp>.<body>, as Standard Webhooks says',
    file: 'src/webhooks/signature.ts',
    from: 'update(`${id}.${timestamp}.${body}`)',
    to: 'update(`${id}.${body}`)',
    tests: ['test/webhooks/delivery.test.ts'],
    pattern: 'healthy receiver',
  },
  {
    name: 'lease-50ms',
    promise: 'A message held by one process is not sent by another while its attempt runs',
    file: 'src/webhooks/webhook-dispatcher.ts',
    from: 'this.#leaseMs = 2 * options.timeoutMs + 1000;',
    to: 'this.#leaseMs = 50;',
    tests: ['test/webhooks/delivery-promises.test.ts'],
    pattern: 'two processes',
  },
  {
    name: 'outbox-after-commit',
    promise: "A plant's webhook messages are written in the transaction that stores it",
    file: 'src/store/sqlite/plant-batch.ts',
    from: 'for (const subscriptionId of subscribers) this.#statements.insertMessages.run(subscriptionId, now, created.length, ids, traces);',
    to: 'setImmediate(() => { for (const subscriptionId of subscribers) this.#statements.insertMessages.run(subscriptionId, now, created.length, ids, traces); });',
    tests: ['test/store/trace-parents.test.ts'],
    pattern: 'sqlite',
  },
  {
    name: 'shutdown-drain',
    promise: 'On SIGTERM the creates accepted are committed and answered before the process exits',
    file: 'src/app.ts',
    from: "app.addHook('onClose', () => groupCommit.drain());",
    to: '',
    tests: ['test/plants/group-commit-drain.test.ts'],
    pattern: 'closing the app',
  },
  {
    name: 'sqlite-synchronous-normal',
    promise: 'SQLite: a 200 is sent after the WAL holding its plant was synced',
    file: 'src/store/sqlite/sqlite-store.ts',
    from: "db.pragma('synchronous = FULL');",
    to: "db.pragma('synchronous = NORMAL');",
    tests: ['test/store/durable-at-the-disk.test.ts', 'test/system/power-loss.test.ts'],
    pattern: 'sqlite',
  },
  {
    name: 'postgres-asynchronous-commit',
    promise: 'PostgreSQL: a 200 is sent after its commit was flushed',
    file: 'src/store/postgres/primary-pool.ts',
    from: 'new pg.Pool({ ...server, max: this.#options.poolSize, stream: watch.socket });',
    to: "new pg.Pool({ ...server, max: this.#options.poolSize, stream: watch.socket, options: '-c synchronous_commit=off' });",
    tests: ['test/store/durable-at-the-disk.test.ts'],
    pattern: 'postgres',
  },
  {
    name: 'retired-secret-never-ends',
    promise: "A rotated-out secret stops signing when its window ends",
    file: 'src/webhooks/subscriptions.ts',
    from: 'retired.until.getTime() > now)',
    to: 'retired.until.getTime() > now - now)',
    tests: ['test/webhooks/secret-rotation.test.ts'],
    pattern: 'grace',
  },
  {
    name: 'retry-delay-never-grows',
    promise: 'Retry delays grow after each failure (exponential backoff with full jitter)',
    file: 'src/webhooks/webhook-dispatcher.ts',
    from: 'retryDelayMs(attempt,',
    to: 'retryDelayMs(1,',
    tests: ['test/webhooks/delivery-promises.test.ts'],
    pattern: 'retry delays',
  },
  {
    name: 'lease-shorter-than-attempt',
    promise: 'A lease outlives the longest attempt',
    file: 'src/webhooks/webhook-dispatcher.ts',
    from: 'this.#leaseMs = 2 * options.timeoutMs + 1000;',
    to: 'this.#leaseMs = options.timeoutMs / 2;',
    tests: ['test/webhooks/delivery-promises.test.ts'],
    pattern: 'two processes',
  },
  {
    name: 'redirect-delivers',
    promise: 'A 3xx answer is not a delivery: the message is retried',
    file: 'src/webhooks/post-message.ts',
    from: 'return this.#status >= 200 && this.#status < 300;',
    to: 'return this.#status >= 200 && this.#status < 400;',
    tests: ['test/webhooks/delivery-promises.test.ts'],
    pattern: '3xx',
  },
  {
    name: 'attempt-timeout-in-seconds',
    promise: 'An attempt ends at WEBHOOK_TIMEOUT_MS',
    file: 'src/webhooks/attempt-delivery.ts',
    from: 'body, timeoutMs);',
    to: 'body, timeoutMs * 1000);',
    tests: ['test/webhooks/delivery-promises.test.ts'],
    pattern: 'never answers',
  },
  {
    name: 'postgres-asynchronous-batch',
    promise: 'PostgreSQL: a 200 is sent after its commit was flushed, whatever the batch statement sets for its own transaction',
    file: 'src/store/postgres/plant-batch.ts',
    from: 'SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[])\n',
    to: "SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[]) WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL\n",
    tests: ['test/store/durable-at-the-disk.test.ts'],
    pattern: 'postgres',
  },
  {
    name: 'settlement-dropped-on-store-error',
    promise: 'An outcome whose recording failed is kept and recorded later, not sent again',
    file: 'src/webhooks/webhook-dispatcher.ts',
    from: 'this.#settlements = settlements.concat(this.#settlements);',
    to: '',
    tests: ['test/webhooks/dispatcher-store-faults.test.ts'],
    pattern: 'settlements that fail',
  },
  {
    name: 'turn-ends-before-its-claim',
    promise: "A dispatcher turn lasts until its claim is over, even when its settlement failed",
    file: 'src/webhooks/webhook-dispatcher.ts',
    from: "const [settled, claimed] = await Promise.allSettled([this.#settle(), this.#stopped ? undefined : this.#claim()]);\n      for (const outcome of [settled, claimed]) if (outcome.status === 'rejected') throw outcome.reason;",
    to: 'await Promise.all([this.#settle(), this.#stopped ? undefined : this.#claim()]);',
    tests: ['test/webhooks/dispatcher-store-faults.test.ts'],
    pattern: 'settlements that fail',
  },
  {
    name: 'throwing-attempt-unhandled',
    promise: 'An attempt that throws is a failed attempt, retried; its slot is freed',
    file: 'src/webhooks/webhook-dispatcher.ts',
    from: '.catch(\n      (error: unknown): AttemptResult => ({ delivered: false, error: error instanceof Error ? error.message : String(error) }),\n    );',
    to: ';',
    tests: ['test/webhooks/dispatcher-store-faults.test.ts'],
    pattern: 'throws',
  },
  {
    name: 'wal-switch-gives-up-at-once',
    promise: 'A new file whose write lock another process holds is switched to WAL once the lock is let go',
    file: 'src/store/sqlite/sqlite-store.ts',
    from: "code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw error;",
    to: "code !== 'SQLITE_BUSY' || Date.now() >= deadline - Infinity) throw error;",
    tests: ['test/store/sqlite-wal-switch.test.ts'],
    pattern: 'let go, within',
  },
  {
    name: 'throwing-answer-stops-the-batch',
    promise: 'An answer that throws does not keep the rest of its batch from theirs',
    file: 'src/plants/group-commit.ts',
    from: '  try {\n    done(error, result);\n  } catch (thrown) {\n    process.nextTick(() => {\n      throw thrown;\n    });\n  }',
    to: '  done(error, result);',
    tests: ['test/plants/group-commit.test.ts'],
    pattern: 'answer that throws',
  },
  {
    name: 'unsampled-plant-loses-traceparent',
    promise: "A plant whose create was not sampled keeps its traceparent, so that its deliveries follow the caller's decision",
    file: 'src/tracing/commit-spans.ts',
    from: 'if (links.length === 0) return { traceParents, end: () => undefined };',
    to: 'if (links.length === 0) return undefined;',
    tests: ['test/tracing/commit-spans.test.ts'],
  },
  {
    name: 'broken-connection-lent-again',
    promise: 'A PostgreSQL connection whose rollback failed is never lent again inside its aborted transaction',
    file: 'src/store/postgres/transaction.ts',
    from: '    client.release(broken);',
    to: '    client.release();',
    tests: ['test/store/postgres-transaction.test.ts'],
  },
  {
    name: 'deliverer-at-serve-priority',
    promise: "serve's deliverer runs at a lower priority than its servers, so that saturated creates keep their share of the cores",
    file: 'src/cli/deliverer-process.ts',
    from: 'export const DELIVERER_NICENESS = 13;',
    to: 'export const DELIVERER_NICENESS = 0;',
    tests: ['test/webhooks/deliverers.test.ts'],
    pattern: 'workers 2',
  },
  {
    name: 'dead-deliverer-not-restarted',
    promise: 'A deliverer that dies is started again by its serve',
    file: 'src/cli/deliverer-process.ts',
    from: 'this.#restart = setTimeout(() => this.start(), this.#restartDelayMs);',
    to: '',
    tests: ['test/webhooks/deliverers.test.ts'],
    pattern: 'killed deliverer',
  },
  {
    name: 'deliverer-outlives-its-serve',
    promise: 'A deliverer whose serve died stops, rather than run on unsupervised',
    file: 'src/cli/deliver-command.ts',
    from: "return Promise.race([stopSignal(), new Promise<string>((resolve) => parent.once('disconnect', () => resolve('its server stopped')))]);",
    to: 'return stopSignal();',
    tests: ['test/webhooks/deliverers.test.ts'],
    pattern: 'killed deliverer',
  },
  {
    name: 'deliverer-keeps-claims-at-stop',
    promise: 'A deliverer stopped with SIGTERM hands back the messages it claimed and did not send, so that another sends them at once',
    file: 'src/cli/deliver-command.ts',
    from: '  await dispatcher.stop(config.shutdownGraceMs);',
    to: '',
    tests: ['test/webhooks/crash-and-processes.test.ts'],
    pattern: 'releases the messages',
  },
];
