import { type Attributes, SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import type { AttemptResult } from '../webhooks/post-message.js';
import { ERROR_TYPE, HTTP_REQUEST_METHOD, HTTP_REQUEST_RESEND_COUNT, HTTP_RESPONSE_STATUS_CODE, SERVER_ADDRESS, SERVER_PORT, WEBHOOK_ATTEMPT, WEBHOOK_ID } from './attributes.js';
import { contextOfTraceParent, traceParentOf } from './trace-parent.js';

export interface DeliverySpan {
  end(result: AttemptResult): void;
}

export interface DeliveryAttempt {
  /** The create's `traceparent`, stored with the message; null for none. */
  readonly traceParent: string | null;
  readonly attempt: number;
  readonly webhookId: string;
  readonly url: URL;
}

/**
 * A child of the create's SERVER span across the outbox; its `traceparent` header, not signed content, lets the receiver's spans join the trace.
 * The URL's path and query stay out of the span: they may hold a secret of the receiver's.
 */
export class DeliverySpans {
  readonly #tracer: Tracer;

  constructor(tracer: Tracer) {
    this.#tracer = tracer;
  }

  start(attempt: DeliveryAttempt, headers: Record<string, string>): DeliverySpan {
    const { url } = attempt;
    const attributes: Attributes = {
      [HTTP_REQUEST_METHOD]: 'POST',
      [SERVER_ADDRESS]: url.hostname,
      [SERVER_PORT]: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
      [WEBHOOK_ATTEMPT]: attempt.attempt,
      [WEBHOOK_ID]: attempt.webhookId,
    };
    if (attempt.attempt > 1) attributes[HTTP_REQUEST_RESEND_COUNT] = attempt.attempt - 1;
    const span = this.#tracer.startSpan('POST', { kind: SpanKind.CLIENT, attributes }, contextOfTraceParent(attempt.traceParent));
    headers['traceparent'] = traceParentOf(span.spanContext());
    return {
      end(result) {
        const status = result.delivered ? result.status : statusOf(result.error);
        if (status !== undefined) span.setAttribute(HTTP_RESPONSE_STATUS_CODE, status);
        if (!result.delivered) {
          span.setAttribute(ERROR_TYPE, status === undefined ? failureOf(result.error) : String(status));
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
      },
    };
  }
}

function statusOf(error: string): number | undefined {
  const match = /^HTTP (\d{3})/.exec(error);
  return match === null ? undefined : Number(match[1]);
}

/** A short, bounded type: a system error's code, or `timeout`; never the receiver's words. */
function failureOf(error: string): string {
  if (error.startsWith('no answer within')) return 'timeout';
  return /^[A-Z][A-Z_]+$/.test(error) ? error : '_OTHER';
}
