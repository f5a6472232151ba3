import { ServiceError } from '../errors.js';
import type { Metrics } from '../observability/metrics.js';
import type { AuthFailureLimiter } from './auth-failure-limiter.js';
import type { RequestLog } from './error-answer.js';

/** The app's one authFailures: every route that asks for a token shares one budget of guesses. */
export interface RefusalDeps {
  readonly authFailures: AuthFailureLimiter;
  readonly metrics: Pick<Metrics, 'authFailures'>;
}

/** `error` (a 401) while `address` is within its limit, else 429 with Retry-After. */
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
