import { type Attributes, type Context, type Link, type SpanKind, trace, TraceFlags } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  type Sampler,
  SamplingDecision,
  type SamplingResult,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace';
import type { SamplerName } from '../config/tracing-settings.js';

export function samplerOf(name: SamplerName, ratio: number): Sampler {
  const root = name.endsWith('always_on') ? new AlwaysOnSampler() : name.endsWith('always_off') ? new AlwaysOffSampler() : new TraceIdRatioBasedSampler(ratio);
  return new LinkedRootSampler(name.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root);
}

/** A root span linked to a sampled span is sampled too: a commit span sampled on its own ratio would be missing from most of the traces kept. */
class LinkedRootSampler implements Sampler {
  readonly #sampler: Sampler;

  constructor(sampler: Sampler) {
    this.#sampler = sampler;
  }

  shouldSample(context: Context, traceId: string, name: string, kind: SpanKind, attributes: Attributes, links: Link[]): SamplingResult {
    if (links.length > 0 && trace.getSpanContext(context) === undefined && links.some((link) => (link.context.traceFlags & TraceFlags.SAMPLED) !== 0)) {
      return { decision: SamplingDecision.RECORD_AND_SAMPLED };
    }
    return this.#sampler.shouldSample(context, traceId, name, kind, attributes, links);
  }

  toString(): string {
    return `LinkedRootSampler{${this.#sampler.toString()}}`;
  }
}
