import type { IncomingHttpHeaders } from 'node:http';
import { type Attributes, type Context, defaultTextMapGetter, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { CLIENT_ADDRESS, ERROR_TYPE, HTTP_REQUEST_METHOD, HTTP_RESPONSE_STATUS_CODE, HTTP_ROUTE, SERVER_PORT, URL_SCHEME } from './attributes.js';

const propagator = new W3CTraceContextPropagator();

const ROUTE = '/plants';

/** The client's address (after TRUST_PROXY) and the port the request reached. */
export interface RequestPeer {
  readonly clientAddress: string | undefined;
  readonly serverPort: number | undefined;
}

/** The SERVER span of POST /plants, for both adapters; of the headers only the W3C Trace Context is read, so no token reaches a span. */
export class RequestSpans {
  readonly #tracer: Tracer;

  constructor(tracer: Tracer) {
    this.#tracer = tracer;
  }

  /** Attributes are set only once sampled: the SDK checks those given to startSpan for every request. */
  start(headers: IncomingHttpHeaders, peer: RequestPeer): Span {
    const span = this.#tracer.startSpan(`POST ${ROUTE}`, { kind: SpanKind.SERVER }, parentOf(headers));
    if (!span.isRecording()) return span;
    const attributes: Attributes = { [HTTP_REQUEST_METHOD]: 'POST', [HTTP_ROUTE]: ROUTE, [URL_SCHEME]: 'http' };
    if (peer.serverPort !== undefined) attributes[SERVER_PORT] = peer.serverPort;
    if (peer.clientAddress !== undefined) attributes[CLIENT_ADDRESS] = peer.clientAddress;
    return span.setAttributes(attributes);
  }

  /** An error answer's catalogue code is `error.type`; only a 5xx, the service's fault, sets the error status. */
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

function parentOf(headers: IncomingHttpHeaders): Context {
  return headers.traceparent === undefined ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
}

/** The `code` of an Error body (`{"error":401,"message":"...","code":"INVALID_TOKEN"}`), which every error answer of the service is. */
export function errorCodeOf(body: string | undefined): string | undefined {
  return body === undefined ? undefined : /"code":"([A-Z_]+)"\}$/.exec(body)?.[1];
}
