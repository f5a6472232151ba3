import type { IncomingHttpHeaders } from 'node:http';
import { type Attributes, type Context, defaultTextMapGetter, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { CLIENT_ADDRESS, ERROR_TYPE, HTTP_REQUEST_METHOD, HTTP_RESPONSE_STATUS_CODE, HTTP_ROUTE, SERVER_PORT, URL_SCHEME } from './attributes.js';

const propagator = new W3CTraceContextPropagator();

/** The one route traced, as `http.route` and the span's name give it. */
const ROUTE = '/plants';

/** Where a request came in: the client's address (after TRUST_PROXY) and the port it reached. */
export interface RequestPeer {
  readonly clientAddress: string | undefined;
  readonly serverPort: number | undefined;
}

/**
 * The SERVER span of each POST /plants, made by both adapters that serve
 * it (Fastify's and the node:http fast path), with the HTTP semantic
 * conventions' attributes. An incoming W3C `traceparent` is its parent.
 * Nothing of the request's headers but the trace context is read: no
 * token reaches a span.
 */
export class RequestSpans {
  readonly #tracer: Tracer;

  constructor(tracer: Tracer) {
    this.#tracer = tracer;
  }

  /**
   * A request's span, started now. Its attributes are given once it is
   * sampled: the SDK checks those given to startSpan for every request.
   */
  start(headers: IncomingHttpHeaders, peer: RequestPeer): Span {
    const span = this.#tracer.startSpan(`POST ${ROUTE}`, { kind: SpanKind.SERVER }, parentOf(headers));
    if (!span.isRecording()) return span;
    const attributes: Attributes = { [HTTP_REQUEST_METHOD]: 'POST', [HTTP_ROUTE]: ROUTE, [URL_SCHEME]: 'http' };
    if (peer.serverPort !== undefined) attributes[SERVER_PORT] = peer.serverPort;
    if (peer.clientAddress !== undefined) attributes[CLIENT_ADDRESS] = peer.clientAddress;
    return span.setAttributes(attributes);
  }

  /**
   * Ends a request's span with its answer's status; an error answer's
   * catalogue code as `error.type`, and a 5xx (the service's fault, not the
   * client's) as the span's error status.
   */
  end(span: Span, status: number, body: string | undefined): void {
    if (!span.isRecording()) {
      span.end();
      return;
    }
    span.setAttribute(HTTP_RESPONSE_STATUS_CODE, status);
    if (status >= 400) {
      const code = errorCodeOf(body);
      if (code !== undefined) span.setAttribute(ERROR_TYPE, code);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  }
}

/** The context an incoming `traceparent` (and `tracestate`) names, or the root when there is none. */
function parentOf(headers: IncomingHttpHeaders): Context {
  return headers.traceparent === undefined ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
}

/** The `code` of an Error body (`{"error":401,"message":"...","code":"INVALID_TOKEN"}`), which every error answer of the service is. */
export function errorCodeOf(body: string | undefined): string | undefined {
  return body === undefined ? undefined : /"code":"([A-Z_]+)"\}$/.exec(body)?.[1];
}
