import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';

/** One span as an OTLP receiver got it, decoded by the test's own reading of OTLP (JSON or protobuf). */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 2 server, 3 client. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string }[];
  /** OTLP's status code: 0 unset, 2 error. */
  statusCode: number;
  /** The resource's attributes (service.name, ...). */
  resource: Record<string, string | number | boolean>;
}

export const SPAN_KIND_SERVER = 2;
export const SPAN_KIND_CLIENT = 3;

/**
 * An OTLP/HTTP receiver on loopback, as a Collector would listen: it takes
 * POST /v1/traces in JSON or protobuf, answers 200, and keeps every span
 * and every request's raw bytes (to search them for what must not be there).
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Each export's body as received, and its content type. */
  readonly exports: { contentType: string; body: Buffer }[] = [];
  readonly #server: http.Server;

  private constructor() {
    this.#server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks);
        const contentType = String(request.headers['content-type']);
        this.exports.push({ contentType, body });
        if (request.method !== 'POST' || request.url !== '/v1/traces') {
          response.writeHead(404).end();
          return;
        }
        this.spans.push(...(contentType.startsWith('application/json') ? spansOfJson(body.toString('utf8')) : spansOfProtobuf(body)));
        response.writeHead(200, { 'content-type': contentType }).end(contentType.startsWith('application/json') ? '{}' : '');
      });
    });
  }

  static async start(t: TestContext): Promise<OtlpReceiver> {
    const receiver = new OtlpReceiver();
    receiver.#server.listen(0, '127.0.0.1');
    await once(receiver.#server, 'listening');
    t.after(() => {
      receiver.#server.closeAllConnections();
      receiver.#server.close();
    });
    return receiver;
  }

  /** The base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  get endpoint(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** Every byte the service exported, as text, for searching. */
  everything(): string {
    return this.exports.map((received) => received.body.toString('latin1')).join('\n');
  }
}

/** OTLP/JSON's AnyValue as a plain value (int64 comes as a string). */
function valueOf(value: Record<string, unknown>): string | number | boolean {
  if ('stringValue' in value) return String(value['stringValue']);
  if ('intValue' in value) return Number(value['intValue']);
  if ('doubleValue' in value) return Number(value['doubleValue']);
  if ('boolValue' in value) return Boolean(value['boolValue']);
  return JSON.stringify(value);
}

type JsonAttributes = { key: string; value: Record<string, unknown> }[] | undefined;

function attributesOf(list: JsonAttributes): Record<string, string | number | boolean> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, valueOf(value)]));
}

/** ExportTraceServiceRequest in OTLP/JSON: ids are hex strings. */
function spansOfJson(text: string): ReceivedSpan[] {
  interface JsonSpan {
    traceId: string;
    spanId: string;
    parentSpanId?: string;
    name: string;
    kind: number;
    attributes?: JsonAttributes;
    links?: { traceId: string; spanId: string }[];
    status?: { code?: number };
  }
  const request = JSON.parse(text) as {
    resourceSpans: { resource?: { attributes?: JsonAttributes }; scopeSpans: { spans: JsonSpan[] }[] }[];
  };
  return request.resourceSpans.flatMap((resourceSpans) =>
    resourceSpans.scopeSpans.flatMap((scope) =>
      scope.spans.map((span) => ({
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId ?? '',
        name: span.name,
        kind: span.kind,
        attributes: attributesOf(span.attributes),
        links: (span.links ?? []).map((link) => ({ traceId: link.traceId, spanId: link.spanId })),
        statusCode: span.status?.code ?? 0,
        resource: attributesOf(resourceSpans.resource?.attributes),
      })),
    ),
  );
}

/**
 * Protocol Buffers' wire format, read field by field: enough of it for
 * OTLP's trace messages (opentelemetry-proto, trace/v1/trace.proto and
 * common/v1/common.proto), read by field number.
 */
type Field = { number: number; value: bigint | Buffer };

function fieldsOf(bytes: Buffer): Field[] {
  const fields: Field[] = [];
  let at = 0;
  const varint = (): bigint => {
    let result = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const byte = bytes[at++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
    }
  };
  while (at < bytes.length) {
    const key = Number(varint());
    const number = key >>> 3;
    const wireType = key & 7;
    if (wireType === 0) fields.push({ number, value: varint() });
    else if (wireType === 1) fields.push({ number, value: bytes.readBigUInt64LE((at += 8) - 8) });
    else if (wireType === 5) fields.push({ number, value: BigInt(bytes.readUInt32LE((at += 4) - 4)) });
    else if (wireType === 2) {
      const length = Number(varint());
      fields.push({ number, value: bytes.subarray(at, (at += length)) });
    } else throw new Error(`unexpected wire type ${wireType}`);
  }
  return fields;
}

const each = (fields: Field[], number: number) => fields.filter((field) => field.number === number).map((field) => field.value);
const bytesOf = (fields: Field[], number: number) => (each(fields, number)[0] as Buffer | undefined) ?? Buffer.alloc(0);
const numberOf = (fields: Field[], number: number) => Number((each(fields, number)[0] as bigint | undefined) ?? 0n);

/** KeyValue { 1 key, 2 AnyValue { 1 string, 2 bool, 3 int, 4 double } }. */
function protobufAttributes(list: (bigint | Buffer)[]): Record<string, string | number | boolean> {
  return Object.fromEntries(
    list.map((entry) => {
      const keyValue = fieldsOf(entry as Buffer);
      const value = fieldsOf(bytesOf(keyValue, 2))[0];
      const plain =
        value === undefined
          ? ''
          : value.number === 1
            ? (value.value as Buffer).toString('utf8')
            : value.number === 2
              ? value.value === 1n
              : value.number === 4
                ? Buffer.from(new BigUint64Array([value.value as bigint]).buffer).readDoubleLE(0)
                : Number(BigInt.asIntN(64, value.value as bigint));
      return [bytesOf(keyValue, 1).toString('utf8'), plain];
    }),
  );
}

/** ExportTraceServiceRequest { 1 ResourceSpans { 1 Resource { 1 attributes }, 2 ScopeSpans { 2 Span } } }. */
function spansOfProtobuf(body: Buffer): ReceivedSpan[] {
  return each(fieldsOf(body), 1).flatMap((resourceSpans) => {
    const resourceFields = fieldsOf(resourceSpans as Buffer);
    const resource = protobufAttributes(each(fieldsOf(bytesOf(resourceFields, 1)), 1));
    return each(resourceFields, 2).flatMap((scopeSpans) =>
      each(fieldsOf(scopeSpans as Buffer), 2).map((encoded) => {
        // Span { 1 trace_id, 2 span_id, 4 parent_span_id, 5 name, 6 kind, 9 attributes, 13 links, 15 status { 3 code } }
        const span = fieldsOf(encoded as Buffer);
        return {
          traceId: bytesOf(span, 1).toString('hex'),
          spanId: bytesOf(span, 2).toString('hex'),
          parentSpanId: bytesOf(span, 4).toString('hex'),
          name: bytesOf(span, 5).toString('utf8'),
          kind: numberOf(span, 6),
          attributes: protobufAttributes(each(span, 9)),
          links: each(span, 13).map((link) => {
            const fields = fieldsOf(link as Buffer);
            return { traceId: bytesOf(fields, 1).toString('hex'), spanId: bytesOf(fields, 2).toString('hex') };
          }),
          statusCode: numberOf(fieldsOf(bytesOf(span, 15)), 3),
          resource,
        };
      }),
    );
  });
}
