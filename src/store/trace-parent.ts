/** Version 00 of W3C Trace Context, lowercase hex; a trace id or span id of zeros is invalid there. */
const TRACE_PARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * Whether a store keeps `value` as a plant's traceparent. Both stores keep
 * anything else as none, rather than refuse it: a malformed one could not
 * continue a trace anyway, and it must not fail the batch of plants it came
 * with. (SQLite packs a valid one in 25 bytes, and zeros mean none.)
 */
export function isTraceParent(value: string | undefined): value is string {
  return value !== undefined && value.length === 55 && TRACE_PARENT.test(value);
}
