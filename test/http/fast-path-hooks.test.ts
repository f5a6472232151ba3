import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { GLOBAL_HOOKS_APPLIED } from '../../src/http/fast-path/plants-fast-path.js';
import { testApp } from '../helpers/test-app.js';

/** The hooks Fastify runs for a request (fastify/lib/hooks.js); the app's lifecycle hooks (onReady, onClose, ...) are not a request's. */
const REQUEST_HOOKS = ['onRequest', 'preParsing', 'preValidation', 'preHandler', 'preSerialization', 'onSend', 'onResponse', 'onError', 'onTimeout', 'onRequestAbort'];

/** The app's global hooks of each request stage, by function name, as Fastify keeps them. */
function globalRequestHooks(app: FastifyInstance): Record<string, string[]> {
  const hooksSymbol = Object.getOwnPropertySymbols(app).find((symbol) => symbol.description === 'fastify.hooks');
  assert.ok(hooksSymbol, 'Fastify keeps its hooks under Symbol(fastify.hooks)');
  const hooks = (app as unknown as Record<symbol, Record<string, ((...args: never[]) => unknown)[]>>)[hooksSymbol]!;
  const byStage: Record<string, string[]> = {};
  for (const stage of REQUEST_HOOKS) {
    const names = hooks[stage]!.map((hook) => hook.name || '(anonymous)');
    if (names.length > 0) byStage[stage] = names;
  }
  return byStage;
}

test('every global Fastify hook a request runs is one the node:http fast path applies too', async (t) => {
  for (const docs of [false, true]) {
    const { app } = await testApp(t, { docs });
    await app.ready();
    assert.deepEqual(
      globalRequestHooks(app),
      GLOBAL_HOOKS_APPLIED,
      'the creates served on node:http never run Fastify hooks: do the new hook\'s work in src/http/fast-path/plants-fast-path.ts as well, then list it in GLOBAL_HOOKS_APPLIED',
    );
  }
});
