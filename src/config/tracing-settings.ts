import { ConfigError } from './setting.js';
import { parseInteger, parseOneOf } from './parsers.js';
import { defineSetting } from './setting.js';

// The SDK's own variable names (opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/), so that a
// deployment configured for other services configures this one. They are handed to the SDK, which reads none itself.

export const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;
export type SamplerName = (typeof SAMPLERS)[number];

/** The protocols of OTEL_EXPORTER_OTLP_PROTOCOL this service exports with; gRPC would need a second HTTP stack. */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

export type TracesExporter = 'otlp' | 'none';

/** A `key=value,key=value` list (W3C Baggage's shape): OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES. */
export type KeyValues = Readonly<Record<string, string>>;

/** An http(s) URL without credentials in it; credentials go in OTEL_EXPORTER_OTLP_HEADERS, which is shown masked. */
function parseEndpoint(text: string, source: string): string {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw new ConfigError(`${source} must be an http:// or https:// URL, got ${JSON.stringify(text)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${source} must be an http:// or https:// URL, got ${JSON.stringify(text)}`);
  if (url.username !== '' || url.password !== '') throw new ConfigError(`${source} must not hold credentials; put them in OTEL_EXPORTER_OTLP_HEADERS`);
  return url.href;
}

/** The text is never repeated in an error, since it may hold a header's secret. */
export function parseKeyValues(text: string, source: string): KeyValues {
  const pairs: Record<string, string> = {};
  for (const item of text.split(',')) {
    if (item.trim() === '') continue;
    const equals = item.indexOf('=');
    let key: string;
    let value: string;
    try {
      key = decodeURIComponent(item.slice(0, equals).trim());
      value = decodeURIComponent(item.slice(equals + 1).trim());
    } catch {
      throw new ConfigError(`${source} must be key=value pairs separated by commas, percent-encoded; one holds a bad % escape`);
    }
    if (equals <= 0 || key === '') throw new ConfigError(`${source} must be key=value pairs separated by commas; one has no key or no =`);
    pairs[key] = value;
  }
  return Object.freeze(pairs);
}

function parseRatio(text: string, source: string): number {
  const ratio = Number(text.trim());
  if (text.trim() === '' || !(ratio >= 0 && ratio <= 1)) throw new ConfigError(`${source} must be a number from 0 to 1, got ${JSON.stringify(text)}`);
  return ratio;
}

/** Header names shown, values masked: they are where an exporter's credentials go. */
const showHeaders = (headers: KeyValues) => Object.keys(headers).map((name) => `${name}=*****`).join(',');
const showPairs = (pairs: KeyValues) => Object.entries(pairs).map(([key, value]) => `${key}=${value}`).join(',');

/** The settings table's entries for tracing (see settings.ts): spread into it. */
export const tracingSettings = {
  // Tracing is on with otlp, or with an endpoint set and this unset; none turns it off whatever else is set.
  otelTracesExporter: defineSetting<TracesExporter | undefined>({
    env: 'OTEL_TRACES_EXPORTER',
    default: undefined,
    help: 'otlp to export traces (on by default once an OTLP endpoint is set), none for no traces',
    parse: (text, source) => parseOneOf(text, source, ['otlp', 'none'] as const),
  }),
  otelExporterOtlpEndpoint: defineSetting<string | undefined>({
    env: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    default: undefined,
    help: "the OTLP/HTTP receiver's base URL; traces go to its /v1/traces (off: http://localhost:4318 once OTEL_TRACES_EXPORTER=otlp)",
    parse: parseEndpoint,
  }),
  otelExporterOtlpTracesEndpoint: defineSetting<string | undefined>({
    env: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    default: undefined,
    help: 'the whole URL traces are posted to, in place of OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces',
    parse: parseEndpoint,
  }),
  otelExporterOtlpProtocol: defineSetting<OtlpProtocol>({
    env: 'OTEL_EXPORTER_OTLP_PROTOCOL',
    default: 'http/protobuf',
    help: `how spans are encoded: ${OTLP_PROTOCOLS.join(' or ')}`,
    parse: (text, source) => parseOneOf(text, source, OTLP_PROTOCOLS),
  }),
  otelExporterOtlpHeaders: defineSetting<KeyValues>({
    env: 'OTEL_EXPORTER_OTLP_HEADERS',
    default: Object.freeze({}),
    help: 'headers sent with each export, as key=value,key=value (percent-encoded); shown masked',
    parse: parseKeyValues,
    show: showHeaders,
  }),
  otelExporterOtlpTimeout: defineSetting({
    env: 'OTEL_EXPORTER_OTLP_TIMEOUT',
    default: 10_000, // milliseconds
    help: 'longest one export may take before its spans are dropped, in ms',
    parse: (text, source) => parseInteger(text, source, 1, 600_000),
  }),
  otelServiceName: defineSetting<string | undefined>({
    env: 'OTEL_SERVICE_NAME',
    default: undefined,
    help: "the service.name of this service's spans (unset: OTEL_RESOURCE_ATTRIBUTES' service.name, else plantstore)",
    parse: (text, source) => {
      if (text.trim() === '') throw new ConfigError(`${source} must not be empty`);
      return text.trim();
    },
  }),
  otelResourceAttributes: defineSetting<KeyValues>({
    env: 'OTEL_RESOURCE_ATTRIBUTES',
    default: Object.freeze({}),
    help: 'more resource attributes of the spans, as key=value,key=value (deployment.environment.name=prod)',
    parse: parseKeyValues,
    show: showPairs,
  }),
  otelTracesSampler: defineSetting<SamplerName>({
    env: 'OTEL_TRACES_SAMPLER',
    default: 'parentbased_always_on',
    help: `which requests are traced: ${SAMPLERS.join(', ')}`,
    parse: (text, source) => parseOneOf(text, source, SAMPLERS),
  }),
  otelTracesSamplerArg: defineSetting({
    env: 'OTEL_TRACES_SAMPLER_ARG',
    default: 1,
    help: 'the share of traces the traceidratio samplers keep, from 0 to 1',
    parse: parseRatio,
  }),
  otelBspScheduleDelay: defineSetting({
    env: 'OTEL_BSP_SCHEDULE_DELAY',
    default: 5000, // milliseconds
    help: 'longest a finished span waits before its batch is exported, in ms',
    parse: (text, source) => parseInteger(text, source, 0, 600_000),
  }),
  otelBspExportTimeout: defineSetting({
    env: 'OTEL_BSP_EXPORT_TIMEOUT',
    default: 30_000, // milliseconds
    help: 'longest the batch processor waits for one export before it sends the next, in ms',
    parse: (text, source) => parseInteger(text, source, 1, 600_000),
  }),
  otelBspMaxQueueSize: defineSetting({
    env: 'OTEL_BSP_MAX_QUEUE_SIZE',
    default: 2048, // spans
    help: 'most finished spans held for export; past it spans are dropped (and counted)',
    parse: (text, source) => parseInteger(text, source, 1, 1_000_000),
  }),
  otelBspMaxExportBatchSize: defineSetting({
    env: 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
    default: 512, // spans
    help: 'most spans in one export (at most OTEL_BSP_MAX_QUEUE_SIZE)',
    parse: (text, source) => parseInteger(text, source, 1, 1_000_000),
  }),
};
