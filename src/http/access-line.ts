import type { Caller } from '../tokens/token-verifier.js';
import type { CompletedRequest } from './request-completed.js';

/** pino's number for the info level, the access line's. */
export const INFO = 30;

/** The access line's fields, for pino to write (a terminal's pretty lines). */
export function accessFields(request: CompletedRequest, status: number, seconds: number) {
  return {
    method: request.method,
    path: request.url.split('?')[0],
    status,
    durationMs: Math.round(seconds * 1e6) / 1000,
    ip: request.ip,
    token: request.caller?.name,
    sub: request.caller?.subject,
    iss: request.caller?.issuer,
  };
}

/**
 * The access line as pino writes it from a request's logger, built with a
 * few string joins instead: the same fields in the same order (level, time,
 * the logger's bindings, reqId, then method, path, status, durationMs, ip
 * and who the request acted for, then msg), fields that are undefined left
 * out as JSON.stringify leaves them out.
 *
 * Under load nearly every line repeats the one before it but for the time,
 * the request id and the duration: the same route and status, the same
 * client and caller. So the line is made of parts, each remembered for the
 * values it was last made from and made again only when they change:
 * method, path and status; address and caller; the millisecond. The request
 * id needs no quoting (request-id.ts); the duration is written from its
 * whole microseconds, without turning a fraction into decimals.
 * test/http/access-line.test.ts proves the line equal to pino's for
 * generated requests.
 */
export class AccessLines {
  readonly #bindings: string;
  #method = '';
  #path = '';
  #status = -1;
  #route = '';
  #ip: string | undefined = '';
  #caller: Caller | null | undefined = undefined;
  #client = '';
  #millisecond = -1;
  #time = '';

  /** `bindings`: the logger's bindings as pino serialised them (`,"pid":…,"hostname":…`). */
  constructor(bindings: string) {
    this.#bindings = bindings;
  }

  line(request: CompletedRequest, status: number, seconds: number): string {
    return `{"level":${INFO},"time":${this.#now()}${this.#bindings},"reqId":"${request.id}"${this.#routePart(request, status)}${milliseconds(seconds)}${this.#clientPart(request)}`;
  }

  #now(): string {
    const now = Date.now();
    if (now !== this.#millisecond) {
      this.#millisecond = now;
      this.#time = String(now);
    }
    return this.#time;
  }

  /** `,"method":…,"path":…,"status":…,"durationMs":`, for the request's method, path and status. */
  #routePart(request: CompletedRequest, status: number): string {
    const query = request.url.indexOf('?');
    const path = query === -1 ? request.url : request.url.slice(0, query);
    if (request.method !== this.#method || path !== this.#path || status !== this.#status) {
      this.#method = request.method;
      this.#path = path;
      this.#status = status;
      this.#route = `,"method":${JSON.stringify(request.method)},"path":${JSON.stringify(path)},"status":${status},"durationMs":`;
    }
    return this.#route;
  }

  /** `,"ip":…` and who the request acted for, then the message and the line's end. */
  #clientPart(request: CompletedRequest): string {
    const { ip, caller } = request;
    if (ip !== this.#ip || caller !== this.#caller) {
      this.#ip = ip;
      this.#caller = caller;
      this.#client = `${ip === undefined ? '' : `,"ip":${JSON.stringify(ip)}`}${who(caller)},"msg":"request"}\n`;
    }
    return this.#client;
  }
}

function who(caller: Caller | null): string {
  if (caller === null) return '';
  if (caller.name !== undefined) return `,"token":${JSON.stringify(caller.name)}`;
  return `${caller.subject === undefined ? '' : `,"sub":${JSON.stringify(caller.subject)}`},"iss":${JSON.stringify(caller.issuer)}`;
}

/** The decimals of each whole number of microseconds under a thousand, as a millisecond figure ends: '', '.001' … '.5' … '.999'. */
const DECIMALS = Array.from({ length: 1000 }, (_, micros) => (micros === 0 ? '' : `.${String(micros).padStart(3, '0').replace(/0+$/, '')}`));

/** Past this many microseconds (about 11 days) a duration is written the general way. */
const EXACT_MICROS = 1e12;

/**
 * `seconds` in milliseconds rounded to the microsecond, spelled as JSON
 * spells `Math.round(seconds * 1e6) / 1000`: that number's shortest
 * decimals are its whole milliseconds and up to three decimals, so the
 * whole part (a small integer, which V8 turns into text from a cache) and
 * a table give the same text without formatting a fraction.
 */
export function milliseconds(seconds: number): string {
  const micros = Math.round(seconds * 1e6);
  if (!(micros >= 0 && micros < EXACT_MICROS)) return String(micros / 1000);
  const whole = Math.floor(micros / 1000);
  return `${whole}${DECIMALS[micros - whole * 1000]}`;
}
