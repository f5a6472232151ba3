const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000 } as const;

const MOST_CREATES = 1_000_000_000;
const LONGEST_WINDOW_MS = 86_400_000;

/** `default` is RATE_LIMIT's, `token` a store token's own; it labels plantstore_rate_limited_total, so never one a client. */
export type PolicyName = 'default' | 'token';

/** At most `limit` creates a `windowMs`: a token bucket of `limit` refilled at `limit` a window. */
export interface RatePolicy {
  readonly name: PolicyName;
  readonly limit: number;
  readonly windowMs: number;
  readonly text: string;
  /** Its RateLimit-Policy field (draft-ietf-httpapi-ratelimit-headers-10): `"default";q=600;w=60`. */
  readonly header: string;
}

/** `N/DURATION` (`600/1m`, `5000/1h`) as a policy; undefined when the text is not one. */
export function parseRatePolicy(text: string, name: PolicyName): RatePolicy | undefined {
  const match = /^(\d{1,10})\/(\d{1,5})([smh])$/.exec(text.trim());
  if (match === null) return undefined;
  const limit = Number(match[1]);
  const windowMs = Number(match[2]) * UNIT_MS[match[3] as keyof typeof UNIT_MS];
  if (limit < 1 || limit > MOST_CREATES || windowMs < 1000 || windowMs > LONGEST_WINDOW_MS) return undefined;
  const canonical = `${limit}/${match[2]}${match[3]}`;
  return { name, limit, windowMs, text: canonical, header: `"${name}";q=${limit};w=${Math.ceil(windowMs / 1000)}` };
}

export const RATE_POLICY_SHAPE = 'N/DURATION with N from 1 to 1000000000 and DURATION from 1s to 24h in s, m or h (600/1m)';

/** A client's bucket carries over between two policies that allow the same. */
export function samePolicy(a: RatePolicy, b: RatePolicy): boolean {
  return a.limit === b.limit && a.windowMs === b.windowMs && a.name === b.name;
}
