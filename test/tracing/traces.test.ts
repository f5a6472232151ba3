import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { describe, test } from 'node:test';
import { testBackends } from '../helpers/backends.js';
import { OtlpReceiver, type ReceivedSpan, SPAN_KIND_CLIENT, SPAN_KIND_SERVER } from '../helpers/otlp-receiver.js';
import { createToken, postPlant, runInProcess, startServer } from '../helpers/processes.js';
import { sqlite } from '../helpers/backends.js';
import { until } from '../helpers/until.js';
import { serverWithWebhook } from '../helpers/webhooks.js';

/*
 * Traces, end to end: a real server exports to an OTLP/HTTP receiver of the
 * test's own, and the spans are read back as the receiver decoded them.
 */

/** Spans exported within a few tens of ms of their end, so that waits are short. */
const QUICK_EXPORT = { OTEL_BSP_SCHEDULE_DELAY: '20' };

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** A plant's body with a fresh id. */
let nextId = 9_007_199_254_740_993n;
const plantBody = () => `{"id":${nextId++},"name":"Monstera","tag":"aroid"}`;

/** POST /plants with these headers on top of the token's. */
async function post(url: string, token: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const response = await fetch(`${url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
    body: plantBody(),
  });
  return { status: response.status, body: await response.text() };
}

/** The first span that `matches`, once the receiver has it. */
async function spanWhere(receiver: OtlpReceiver, what: string, matches: (span: ReceivedSpan) => boolean): Promise<ReceivedSpan> {
  await until(what, () => receiver.spans.some(matches));
  return receiver.spans.find(matches)!;
}

for (const backend of await testBackends('traces')) {
  describe(`traces on ${backend.name}`, () => {
    test('a create with traceparent: the SERVER span is its child, the commit links to it, the webhook delivery continues the trace', async (t) => {
      const receiver = await OtlpReceiver.start(t);
      const { receiver: hooks, token, server } = await serverWithWebhook(t, backend, {
        settings: {
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
          OTEL_SERVICE_NAME: 'plants-test',
          TRUST_PROXY: 'loopback',
          ...QUICK_EXPORT,
        },
      });
      const traceId = hex(16);
      const callerSpanId = hex(8);
      // Through a proxy on loopback: the span's client.address is the client the proxy names.
      const created = await post(server.url, token, { traceparent: `00-${traceId}-${callerSpanId}-01`, 'x-forwarded-for': '203.0.113.7' });
      assert.equal(created.status, 200, created.body);

      const serverSpan = await spanWhere(receiver, 'the SERVER span is exported', (span) => span.kind === SPAN_KIND_SERVER && span.traceId === traceId);
      assert.equal(serverSpan.parentSpanId, callerSpanId);
      assert.equal(serverSpan.name, 'POST /plants');
      assert.deepEqual(
        {
          method: serverSpan.attributes['http.request.method'],
          route: serverSpan.attributes['http.route'],
          status: serverSpan.attributes['http.response.status_code'],
          scheme: serverSpan.attributes['url.scheme'],
          port: serverSpan.attributes['server.port'],
          client: serverSpan.attributes['client.address'],
        },
        { method: 'POST', route: '/plants', status: 200, scheme: 'http', port: Number(new URL(server.url).port), client: '203.0.113.7' },
      );
      assert.equal(serverSpan.resource['service.name'], 'plants-test');

      const commit = await spanWhere(receiver, 'the commit span links to the request', (span) => span.links.some((link) => link.spanId === serverSpan.spanId));
      assert.equal(commit.name, 'INSERT plants');
      assert.equal(commit.attributes['db.system.name'], backend.name === 'sqlite' ? 'sqlite' : 'postgresql');
      assert.ok(Number(commit.attributes['db.operation.batch.size']) >= 1);
      assert.equal(commit.parentSpanId, '', 'the commit is a root span, linked rather than parented');
      assert.deepEqual(commit.links.find((link) => link.spanId === serverSpan.spanId), { traceId, spanId: serverSpan.spanId });

      await until('the webhook is delivered', () => hooks.received.some((request) => request.status === 204));
      const delivery = hooks.received.find((request) => request.status === 204)!;
      assert.equal(delivery.verifiedSignatures, 1, 'the traceparent leaves the signature as it was');
      const [, deliveredTraceId, deliveredSpanId] = delivery.traceParent?.split('-') ?? [];
      assert.equal(deliveredTraceId, traceId, 'the receiver sees the create\'s trace');

      const client = await spanWhere(receiver, 'the delivery span is exported', (span) => span.kind === SPAN_KIND_CLIENT && span.spanId === deliveredSpanId);
      assert.equal(client.traceId, traceId);
      assert.equal(client.parentSpanId, serverSpan.spanId);
      assert.equal(client.attributes['http.request.method'], 'POST');
      assert.equal(client.attributes['server.address'], '127.0.0.1');
      assert.equal(client.attributes['http.response.status_code'], 204);
      assert.equal(client.attributes['plantstore.webhook.attempt'], 1);
      assert.equal(client.attributes['plantstore.webhook.id'], delivery.webhookId);
    });

    test('a 401 has its SERVER span with its status and code, and no secret is anywhere in the export', async (t) => {
      const receiver = await OtlpReceiver.start(t);
      const { subscription, token, server, env } = await serverWithWebhook(t, backend, {
        settings: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', ...QUICK_EXPORT },
      });
      const wrongToken = `wrong-${hex(16)}`;
      const refused = await post(server.url, wrongToken);
      assert.equal(refused.status, 401);
      const span = await spanWhere(receiver, 'the 401 is exported', (exported) => exported.attributes['http.response.status_code'] === 401);
      assert.equal(span.kind, SPAN_KIND_SERVER);
      assert.equal(span.attributes['error.type'], 'INVALID_TOKEN');
      assert.equal(span.statusCode, 0, 'a client error is not the server span\'s error');

      // Creates on both adapters (the first token lookup goes through Fastify, the next ones the fast path), and a delivery.
      for (let i = 0; i < 3; i++) assert.equal((await post(server.url, token)).status, 200);
      await until('three creates and a delivery are exported', () =>
        receiver.spans.filter((exported) => exported.attributes['http.response.status_code'] === 200).length >= 3 &&
        receiver.spans.some((exported) => exported.kind === SPAN_KIND_CLIENT),
      );
      const everything = receiver.everything();
      for (const secret of [wrongToken, token, subscription.secret, subscription.secret.replace(/^whsec_/, ''), 'Bearer', 'authorization']) {
        assert.ok(!everything.includes(secret), `the export holds ${secret.slice(0, 12)}...`);
      }
      const password = new URL(env.DATABASE_URL!.replace(/^sqlite:/, 'sqlite://x/')).password;
      if (password !== '') assert.ok(!everything.includes(password), 'the export holds the database password');
    });
  });
}

test('postgres: the database password in DATABASE_URL never reaches a span', async (t) => {
  const backends = await testBackends('traces without the database password');
  const postgres = backends.find((backend) => backend.name === 'postgres');
  if (postgres === undefined) return;
  const receiver = await OtlpReceiver.start(t);
  const password = `pw-${hex(12)}`;
  // Trust authentication takes any password: it is in the URL, and must stay out of the spans.
  const url = new URL(await postgres.freshUrl(t));
  url.password = password;
  const env = { DATABASE_URL: url.href, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, ...QUICK_EXPORT };
  const token = await createToken(env, 'writer');
  const server = await startServer(t, env);
  assert.equal((await postPlant(server.url, token, plantBody())).status, 200);
  await until('the commit is exported', () => receiver.spans.some((span) => span.name === 'INSERT plants'));
  assert.equal(receiver.spans.find((span) => span.name === 'INSERT plants')!.attributes['db.system.name'], 'postgresql');
  assert.ok(!receiver.everything().includes(password));
  assert.ok(!receiver.everything().includes(token));
});

test('the default protocol exports protobuf, which decodes to the same spans', async (t) => {
  const receiver = await OtlpReceiver.start(t);
  const env = { DATABASE_URL: await sqlite.freshUrl(t), OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, ...QUICK_EXPORT };
  const token = await createToken(env, 'writer');
  const server = await startServer(t, env);
  const traceId = hex(16);
  assert.equal((await post(server.url, token, { traceparent: `00-${traceId}-${hex(8)}-01` })).status, 200);
  const span = await spanWhere(receiver, 'the SERVER span is exported', (exported) => exported.traceId === traceId);
  assert.ok(receiver.exports.every((exported) => exported.contentType === 'application/x-protobuf'));
  assert.equal(span.name, 'POST /plants');
  assert.equal(span.attributes['http.response.status_code'], 200);
  assert.equal(span.resource['service.name'], 'plantstore');
  await until('the commit span is exported', () => receiver.spans.some((exported) => exported.links.some((link) => link.spanId === span.spanId)));
});

/** A TCP server that takes connections and never answers on them: a receiver that hangs. */
async function blackHole(t: import('node:test').TestContext): Promise<string> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => sockets.add(socket.on('error', () => undefined)));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

/** A port nothing listens on: a receiver that is away. */
async function closedPort(): Promise<string> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

async function droppedSpans(url: string): Promise<Map<string, number>> {
  const metrics = await (await fetch(`${url}/metrics`)).text();
  return new Map([...metrics.matchAll(/^plantstore_trace_spans_dropped_total\{reason="([^"]+)"\} (\d+)/gm)].map((match) => [match[1]!, Number(match[2])]));
}

for (const receiverState of ['hangs', 'is away'] as const) {
  test(`a receiver that ${receiverState}: creates are answered without waiting for it, and the spans dropped are counted`, async (t) => {
    const endpoint = receiverState === 'hangs' ? await blackHole(t) : await closedPort();
    // An export that hangs holds for 30 s: were a create to wait for it, the bound below would fail.
    const env = {
      DATABASE_URL: await sqlite.freshUrl(t),
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_TIMEOUT: '30000',
      OTEL_BSP_MAX_QUEUE_SIZE: '8',
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '4',
      ...QUICK_EXPORT,
    };
    const token = await createToken(env, 'writer');
    const server = await startServer(t, env);
    const started = Date.now();
    for (let i = 0; i < 100; i++) assert.equal((await postPlant(server.url, token, plantBody())).status, 200);
    const elapsedMs = Date.now() - started;
    assert.ok(elapsedMs < 15_000, `100 creates took ${elapsedMs} ms: they waited for the exporter`);
    const reason = receiverState === 'hangs' ? 'queue_full' : undefined;
    await until('dropped spans are counted', async () => {
      const dropped = await droppedSpans(server.url);
      return reason === undefined ? [...dropped.values()].some((count) => count > 0) : (dropped.get(reason) ?? 0) > 0;
    });
    const dropped = await droppedSpans(server.url);
    const total = [...dropped.values()].reduce((sum, count) => sum + count, 0);
    // 100 SERVER spans and at least one commit span each were made; a queue of 8 keeps at most 8 of them, and one export of 4 is in flight.
    if (receiverState === 'hangs') assert.ok(total >= 100 - 8 - 4, `only ${total} spans counted as dropped: ${JSON.stringify([...dropped])}`);
    // The server still stops within its bounds, its last export given up after the final export's wait.
    const stopping = Date.now();
    assert.equal(await server.stop(), 0);
    assert.ok(Date.now() - stopping < 10_000, `the stop took ${Date.now() - stopping} ms`);
  });
}

test('plantstore config shows the tracing settings, header values masked; a bad one is refused by name', async () => {
  const env = {
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector.internal:4318',
    OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=s3cr3t-value,x-tenant=blue',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=prod',
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: '0.25',
  };
  const shown = await runInProcess(['config'], env);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /^OTEL_EXPORTER_OTLP_HEADERS=x-api-key=\*\*\*\*\*,x-tenant=\*\*\*\*\*$/m);
  assert.match(shown.stdout, /^OTEL_EXPORTER_OTLP_ENDPOINT=http:\/\/collector\.internal:4318\/$/m);
  assert.match(shown.stdout, /^OTEL_TRACES_SAMPLER=parentbased_traceidratio$/m);
  assert.match(shown.stdout, /^OTEL_TRACES_SAMPLER_ARG=0\.25$/m);
  assert.match(shown.stdout, /^OTEL_RESOURCE_ATTRIBUTES=deployment\.environment\.name=prod$/m);
  assert.ok(!shown.stdout.includes('s3cr3t-value') && !shown.stderr.includes('s3cr3t-value'));

  for (const [name, value, words, secret] of [
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc', /OTEL_EXPORTER_OTLP_PROTOCOL must be one of http\/protobuf, http\/json/, undefined],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'http://user:s3cr3t@collector:4318', /OTEL_EXPORTER_OTLP_ENDPOINT must not hold credentials/, 's3cr3t'],
    ['OTEL_TRACES_SAMPLER_ARG', '1.5', /OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1/, undefined],
    ['OTEL_EXPORTER_OTLP_HEADERS', 's3cr3t', /OTEL_EXPORTER_OTLP_HEADERS must be key=value pairs/, 's3cr3t'],
  ] as const) {
    const refused = await runInProcess(['config'], { [name]: value });
    assert.equal(refused.code, 2, `${name}=${value}: ${refused.stderr}`);
    assert.match(refused.stderr, words);
    if (secret !== undefined) assert.ok(!refused.stderr.includes(secret), `the error repeats ${secret}`);
  }
});
