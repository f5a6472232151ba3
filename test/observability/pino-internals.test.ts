import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { pino } from 'pino';
import { INFO, loggerBindings, loggerStream } from '../../src/observability/pino-internals.js';

// What src/observability/pino-internals.ts reads of pino beyond its documented
// API, checked on the installed pino: a failure names what a release took away.

test("pino's symbols.streamSym holds the logger's destination", () => {
  assert.equal(typeof pino.symbols.streamSym, 'symbol', 'pino.symbols.streamSym is gone');
  const destination = new Writable({ write: (_chunk, _encoding, done) => done() });
  assert.equal(loggerStream(pino({}, destination)), destination, 'pino.symbols.streamSym no longer holds the destination');
});

test("pino's symbols.chindingsSym holds the bindings as written, and info is level 30", () => {
  assert.equal(typeof pino.symbols.chindingsSym, 'symbol', 'pino.symbols.chindingsSym is gone');
  const logger = pino({ base: { pid: 7 } }).child({ worker: 2 });
  assert.equal(loggerBindings(logger), ',"pid":7,"worker":2', 'pino.symbols.chindingsSym no longer holds the serialised bindings');
  assert.equal(pino.levels.values['info'], INFO);
});
