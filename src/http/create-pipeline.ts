import type { IncomingHttpHeaders } from 'node:http';
import type { Span } from '@opentelemetry/api';
import { serializePlant } from '../contract/plant-codecs.js';
import { ServiceError } from '../errors.js';
import type { Metrics } from '../observability/metrics.js';
import { createPlant } from '../plants/create-plant.js';
import type { NewPlant } from '../plants/plant.js';
import type { CommitQueue } from '../plants/plant-writer.js';
import { clientKey } from '../rate-limits/client-key.js';
import type { RateDecision, RateLimiter, RateLimitHeaders } from '../rate-limits/rate-limiter.js';
import type { PolicyName, RatePolicy } from '../rate-limits/rate-policy.js';
import type { Caller, TokenVerifier, Verification } from '../tokens/token-verifier.js';
import type { ExtraHeaders } from './answer-headers.js';
import type { AuthFailureLimiter } from './auth-failure-limiter.js';
import { refusedAuthentication } from './auth-refusal.js';
import { bearerToken } from './bearer-token.js';
import { errorAnswer, type RequestLog } from './error-answer.js';
import { mediaTypeProblem } from './json-media-type.js';
import { readNewPlant } from './read-new-plant.js';

export interface CreatePipelineDeps {
  groupCommit: CommitQueue;
  verifier: TokenVerifier;
  authFailures: AuthFailureLimiter;
  metrics: Metrics;
  rateLimiter: RateLimiter;
  /** RATE_LIMIT: the policy of every client without one of its own; undefined for none. */
  defaultRateLimit: RatePolicy | undefined;
}

/** A request the pipeline answers; its logger is read only when a line is logged. */
export interface PendingCreate {
  readonly log: RequestLog;
  /** Its token was accepted before the body was read. */
  readonly caller: Caller;
  /** Set to the policy that refused the create, for the access line. */
  rateLimited: PolicyName | undefined;
  /** The commit links to this SERVER span. */
  readonly span: Span | undefined;
  /** Writes the answer: `body` is JSON, `headers` an error's own (Retry-After, WWW-Authenticate), or undefined. */
  answer(status: number, body: string, headers: ExtraHeaders): void;
}

/** Called once; a refused media type still passes its caller, for the access line. */
export type AdmitCallback = (refusal: ServiceError | undefined, caller?: Caller) => void;

/**
 * POST /plants with no HTTP framework in it: both adapters (Fastify's and the node:http fast path) call these steps,
 * so they cannot disagree on what is valid, who is let in or how an answer reads. Only a create that passes
 * validation takes from the quota; every answer from the media type on carries the caller's RateLimit fields.
 */
export class CreatePipeline {
  readonly #deps: CreatePipelineDeps;

  constructor(deps: CreatePipelineDeps) {
    this.#deps = deps;
  }

  /** The caller when the headers settle everything but the body (JSON media type, remembered valid token); else undefined. */
  rememberedCaller(headers: IncomingHttpHeaders): Caller | undefined {
    if (mediaTypeProblem(headers['content-type']) !== undefined) return undefined;
    const token = bearerToken(headers.authorization);
    if (token === undefined) return undefined;
    const verdict = this.#deps.verifier.verifyRemembered(token);
    return verdict !== undefined && verdict.valid ? verdict.caller : undefined;
  }

  /** Authentication (RFC 6750), then the media type; `done` runs synchronously for a remembered verdict, so the common case costs no promise. */
  admit(headers: IncomingHttpHeaders, address: string, request: { readonly log: RequestLog }, done: AdmitCallback): void {
    const token = bearerToken(headers.authorization);
    if (token === undefined) {
      this.#refuse(address, request, new ServiceError('MISSING_CREDENTIALS'), 'missing', done);
      return;
    }
    const decide = (verification: Verification) => {
      if (!verification.valid) {
        this.#refuseToken(verification, address, request, done);
        return;
      }
      const { caller } = verification;
      const problem = mediaTypeProblem(headers['content-type']);
      if (problem === undefined) done(undefined, caller);
      else done(new ServiceError('UNSUPPORTED_MEDIA_TYPE', { detail: problem, headers: this.#rateFields(caller) ?? {} }), caller);
    };
    const remembered = this.#deps.verifier.verifyRemembered(token);
    if (remembered !== undefined) decide(remembered);
    else this.#deps.verifier.verify(token).then(decide, (error: unknown) => done(error as ServiceError));
  }

  create(text: string, request: PendingCreate): void {
    let plant: NewPlant;
    try {
      plant = readNewPlant(text);
    } catch (error) {
      this.fail(request, error, this.#rateFields(request.caller));
      return;
    }
    const policy = this.#policyOf(request.caller);
    if (policy === undefined) {
      this.#create(plant, request, undefined);
      return;
    }
    const decision = this.#deps.rateLimiter.take(clientKey(request.caller), policy);
    if (decision instanceof Promise) decision.then((taken) => this.#decided(plant, request, taken), (error: unknown) => this.fail(request, error));
    else this.#decided(plant, request, decision);
  }

  #decided(plant: NewPlant, request: PendingCreate, decision: RateDecision): void {
    if (decision.allowed) {
      this.#create(plant, request, decision.headers);
      return;
    }
    const name = decision.policy.name;
    this.#deps.metrics.rateLimited.inc({ policy: name });
    request.rateLimited = name;
    this.fail(request, new ServiceError('RATE_LIMITED', { detail: `retry in ${decision.retryAfterSeconds} s`, headers: decision.headers }));
  }

  #create(plant: NewPlant, request: PendingCreate, rateFields: RateLimitHeaders | undefined): void {
    const metrics = this.#deps.metrics;
    try {
      createPlant(
        this.#deps.groupCommit,
        plant,
        (error, created) => {
          if (error === undefined) {
            metrics.countCreate(created!.outcome);
            request.answer(200, serializePlant(created!.plant), rateFields);
            return;
          }
          if (error instanceof ServiceError && error.code === 'PLANT_CONFLICT') metrics.countCreate('conflict');
          this.fail(request, error, rateFields);
        },
        request.span?.spanContext(),
      );
    } catch (error) {
      // A plant that no store can keep is refused before anything is queued.
      this.fail(request, error, rateFields);
    }
  }

  #policyOf(caller: Caller): RatePolicy | undefined {
    return caller.rateLimit ?? this.#deps.defaultRateLimit;
  }

  #rateFields(caller: Caller): RateLimitHeaders | undefined {
    const policy = this.#policyOf(caller);
    return policy === undefined ? undefined : this.#deps.rateLimiter.headers(clientKey(caller), policy);
  }

  fail(request: PendingCreate, error: unknown, extra?: RateLimitHeaders): void {
    const answer = errorAnswer(error, request.log);
    request.answer(answer.status, answer.body, extra === undefined ? answer.headers : { ...answer.headers, ...extra });
  }

  #refuseToken(verification: Verification & { valid: false }, address: string, request: { readonly log: RequestLog }, done: AdmitCallback): void {
    const { metrics } = this.#deps;
    const { reason } = verification;
    if (verification.reason === 'jwt_unavailable') {
      // The token may be fine: the client is not at fault, and its address is not counted towards 429.
      metrics.authFailures.inc({ reason });
      request.log.warn({ reason, problem: verification.detail }, 'bearer token could not be checked');
      done(new ServiceError('IDP_UNAVAILABLE', { headers: { 'retry-after': String(verification.retryAfterSeconds) } }));
      return;
    }
    const { caller } = verification;
    request.log.info({ reason, sub: caller?.subject, iss: caller?.issuer }, 'bearer token refused');
    if (verification.reason === 'jwt_scope') {
      // Authentic but not allowed: not a failed authentication, so not counted towards 429 either.
      metrics.authFailures.inc({ reason });
      const challenge = `Bearer realm="plantstore", error="insufficient_scope", scope="${verification.scope}"`;
      done(new ServiceError('INSUFFICIENT_SCOPE', { detail: verification.scope, headers: { 'www-authenticate': challenge } }));
      return;
    }
    const detail = verification.detail === undefined ? {} : { detail: verification.detail };
    this.#refuse(address, request, new ServiceError('INVALID_TOKEN', detail), reason, done);
  }

  #refuse(address: string, request: { readonly log: RequestLog }, error: ServiceError, reason: string, done: AdmitCallback): void {
    done(refusedAuthentication(this.#deps, address, request.log, error, reason));
  }
}
