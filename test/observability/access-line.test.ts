import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import fc from 'fast-check';
import { pino } from 'pino';
import { accessFields, AccessLines, putMilliseconds } from '../../src/observability/access-line.js';
import type { CompletedRequest } from '../../src/observability/access-line.js';
import type { Caller } from '../../src/tokens/token-verifier.js';
import { type ByteLines, loggerOptions } from '../../src/observability/logger.js';
import { INFO, loggerBindings } from '../../src/observability/pino-internals.js';

/** A logger with the service's settings, writing into `lines`, with the time fixed so that lines compare whole. */
function pinoInto(lines: string[]) {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return pino({ ...loggerOptions('info'), timestamp: () => `,"time":${TIME}` }, sink);
}

const TIME = 1_764_000_000_000;

/** Lines written as bytes into small blocks, as the log's are; `text` reads them back. */
class Blocks implements ByteLines {
  readonly #full: Buffer[] = [];
  #block = Buffer.alloc(64);
  end = 0;

  room(bytes: number): Buffer {
    if (this.end + bytes > this.#block.length) {
      this.#full.push(this.#block.subarray(0, this.end));
      this.#block = Buffer.alloc(Math.max(64, bytes));
      this.end = 0;
    }
    return this.#block;
  }

  commit(bytes: number): void {
    this.end += bytes;
  }

  text(): string {
    return Buffer.concat([...this.#full, this.#block.subarray(0, this.end)]).toString('utf8');
  }
}
/** The time in a line AccessLines made, which reads the clock. */
const withFixedTime = (line: string) => line.replace(/^\{"level":30,"time":\d+,/, `{"level":30,"time":${TIME},`);

// Small pools, so that consecutive requests often repeat a part (what AccessLines remembers) and often do not.
const text = fc.string({ unit: 'binary', maxLength: 12 });
// The ids request-id.ts makes, and a few it never makes, which must still come out as JSON.
const id = fc.oneof(fc.uuid(), fc.stringMatching(/^[A-Za-z0-9._:@/+=-]{1,40}$/), fc.constantFrom('quote"d', 'back\\slash', 'ü', '\u0007'));
const caller: fc.Arbitrary<Caller | null> = fc.oneof(
  fc.constant(null),
  fc.constantFrom('bench', 'quote"name', 'ünïcode').map((name) => ({ name })),
  fc.record({ subject: fc.option(text, { nil: undefined }), issuer: fc.constantFrom('https://idp.example', 'iss\\with\\backslashes') }),
);
const request = fc.record({
  id,
  method: fc.constantFrom('POST', 'GET', 'DELETE'),
  url: fc.constantFrom('/plants', '/plants?x=1', '/healthz', '/"odd\\path?q', '/ü/\u0001'),
  ip: fc.constantFrom(undefined, '127.0.0.1', '::1', '10.0.0."7'),
  caller,
  rateLimited: fc.constantFrom(undefined, 'default', 'token'),
  status: fc.constantFrom(200, 401, 429, 503),
  seconds: fc.oneof(fc.double({ min: 0, max: 5, noNaN: true }), fc.integer({ min: 0, max: 10 ** 7 }).map((micros) => micros / 1e6)),
});

test('the access line is the line pino writes for the same fields, request after request', () => {
  fc.assert(
    fc.property(fc.array(request, { minLength: 1, maxLength: 30 }), (requests) => {
      const written: string[] = [];
      const logger = pinoInto(written);
      const lines = new AccessLines(loggerBindings(logger));
      const blocks = new Blocks();
      for (const { status, seconds, ...fields } of requests) {
        const completed: CompletedRequest = { ...fields, log: logger };
        logger.child({ reqId: completed.id }).info(accessFields(completed, status, seconds), 'request');
        lines.write(blocks, completed, status, seconds);
      }
      assert.deepEqual(blocks.text().split(/(?<=\n)/).map(withFixedTime), written);
    }),
    { numRuns: 300 },
  );
});

test('a duration is spelled as JSON spells the milliseconds rounded to the microsecond', () => {
  const spelled = (seconds: number) => {
    const block = Buffer.alloc(32);
    return block.toString('latin1', 0, putMilliseconds(block, 0, seconds));
  };
  const json = (seconds: number) => JSON.stringify(Math.round(seconds * 1e6) / 1000);
  for (const seconds of [0, 1e-7, 5e-7, 0.000001, 0.0001, 0.00123, 0.0012345, 0.05, 0.1, 1, 1.0005, 59.999999, 1e6 - 1e-6, 1e6, 2e6, 1e9, -0.001, NaN, Infinity, -Number.MAX_VALUE])
    assert.equal(spelled(seconds), json(seconds), String(seconds));
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 53 - 1 }), (micros) => {
      assert.equal(spelled(micros / 1e6), json(micros / 1e6));
    }),
    { numRuns: 20_000 },
  );
});

test("the access line's level is pino's number for info", () => {
  assert.equal(INFO, pino.levels.values['info']);
});
