import { ServiceError } from '../errors.js';
import type { Metrics } from '../observability/metrics.js';
import type { AuthFailureLimiter } from './auth-failure-limiter.js';
import type { RequestLog } from './error-answer.js';

/** What a refusal is counted in: the app's one authFailures, so that every route that asks for a token shares one budget of guesses. */
export interface RefusalDeps {
  readonly authFailures: AuthFailureLimiter;
  readonly metrics: Metrics;
}

/**
 * A failed authentication from `address`, on any route that asks for a
 * token: `error` (a 401) while the address is within its limit, else 429
 * with Retry-After. Counted in plantstore_auth_failures_total by `reason`,
 * or as `rate_limited` past the limit.
 */
export function refusedAuthentication(deps: RefusalDeps, address: string, log: RequestLog, error: ServiceError, reason: string): ServiceError {
  const waitSeconds = deps.authFailures.recordFailure(address);
  if (waitSeconds === undefined) {
    deps.metrics.authFailures.inc({ reason });
    return error;
  }
  deps.metrics.authFailures.inc({ reason: 'rate_limited' });
  log.warn({ ip: address }, 'too many failed authentications from this address');
  return new ServiceError('TOO_MANY_AUTH_FAILURES', { headers: { 'retry-after': String(waitSeconds) } });
}
