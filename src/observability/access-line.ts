import type { ByteLines } from './logger.js';
import { INFO } from './pino-internals.js';
import type { PolicyName } from '../rate-limits/rate-policy.js';
import type { Caller } from '../tokens/token-verifier.js';

/** What the access line needs of an answered request, from Fastify or from http/fast-path/plants-fast-path.ts. */
export interface CompletedRequest {
  readonly id: string;
  readonly method: string;
  readonly url: string;
  /** The client's address: the peer, or behind TRUST_PROXY the one X-Forwarded-For gives. */
  readonly ip: string | undefined;
  readonly caller: Caller | null;
  readonly rateLimited?: PolicyName | undefined;
  /** For the access line when lines are not JSON on stdout (a terminal's pretty lines). */
  readonly log: { info(fields: object, message: string): void };
}

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
    rateLimit: request.rateLimited,
  };
}

const bytes = (text: string) => Buffer.from(text, 'utf8');
const HEAD = bytes(`{"level":${INFO},"time":`);
const REQUEST_ID = bytes(',"reqId":"');
const QUOTE = 0x22;
/** A time in milliseconds or a duration's whole milliseconds has at most 16 digits (2^53). */
const MOST_DIGITS = 16;
/** JSON.stringify of any number is at most 24 characters. */
const MOST_DURATION = 24;

/**
 * The line pino would write from a request's logger, as bytes straight into the log's block, same fields in the same order.
 * Most lines differ only in time, request id and duration: the other parts are kept as bytes and remade only when their values change.
 * test/observability/access-line.test.ts holds the bytes equal to pino's line.
 */
export class AccessLines {
  readonly #bindings: Buffer;
  // What each part was last made from; the first line makes both (no request has status -1 or caller undefined).
  #method = '';
  #path = '';
  #status = -1;
  #route = Buffer.alloc(0);
  #ip: string | undefined = '';
  #caller: Caller | null | undefined = undefined;
  #rateLimited: PolicyName | undefined = undefined;
  #client = Buffer.alloc(0);

  constructor(bindings: string) {
    this.#bindings = bytes(bindings);
  }

  write(into: ByteLines, request: CompletedRequest, status: number, seconds: number): void {
    const id = request.id;
    const route = this.#routePart(request, status);
    const client = this.#clientPart(request);
    // The id's room is for its JSON at the longest: six bytes a character (\u0007), and its quotes.
    const most = HEAD.length + MOST_DIGITS + this.#bindings.length + REQUEST_ID.length + 6 * id.length + 2 + route.length + MOST_DURATION + client.length;
    const block = into.room(most);
    let at = into.end;
    at = put(block, at, HEAD);
    at = putInteger(block, at, Date.now());
    at = put(block, at, this.#bindings);
    at = put(block, at, REQUEST_ID);
    at = putId(block, at, id);
    at = put(block, at, route);
    at = putMilliseconds(block, at, seconds);
    at = put(block, at, client);
    into.commit(at - into.end);
  }

  #routePart(request: CompletedRequest, status: number): Buffer {
    const query = request.url.indexOf('?');
    const path = query === -1 ? request.url : request.url.slice(0, query);
    if (request.method !== this.#method || path !== this.#path || status !== this.#status) {
      this.#method = request.method;
      this.#path = path;
      this.#status = status;
      this.#route = bytes(`,"method":${JSON.stringify(request.method)},"path":${JSON.stringify(path)},"status":${status},"durationMs":`);
    }
    return this.#route;
  }

  #clientPart(request: CompletedRequest): Buffer {
    const { ip, caller, rateLimited } = request;
    if (ip !== this.#ip || caller !== this.#caller || rateLimited !== this.#rateLimited) {
      this.#ip = ip;
      this.#caller = caller;
      this.#rateLimited = rateLimited;
      const policy = rateLimited === undefined ? '' : `,"rateLimit":"${rateLimited}"`;
      this.#client = bytes(`${ip === undefined ? '' : `,"ip":${JSON.stringify(ip)}`}${who(caller)}${policy},"msg":"request"}\n`);
    }
    return this.#client;
  }
}

function who(caller: Caller | null): string {
  if (caller === null) return '';
  if (caller.name !== undefined) return `,"token":${JSON.stringify(caller.name)}`;
  return `${caller.subject === undefined ? '' : `,"sub":${JSON.stringify(caller.subject)}`},"iss":${JSON.stringify(caller.issuer)}`;
}

function put(block: Buffer, at: number, part: Uint8Array): number {
  block.set(part, at);
  return at + part.length;
}

/** A well-formed id (request-id.ts) is printable ASCII without a quote or backslash, copied byte for byte; any other as JSON.stringify spells it. */
function putId(block: Buffer, at: number, id: string): number {
  for (let i = 0; i < id.length; i++) {
    const code = id.charCodeAt(i);
    if (code < 0x20 || code > 0x7e || code === QUOTE || code === 0x5c) return at + block.write(JSON.stringify(id).slice(1), at, 'utf8');
    block[at + i] = code;
  }
  block[at + id.length] = QUOTE;
  return at + id.length + 1;
}

function putInteger(block: Buffer, at: number, value: number): number {
  if (value < BILLION) return putSmall(block, at, value, 0);
  // In two parts, each a small integer: the remainder of a larger one would be taken in floating point.
  const high = Math.floor(value / BILLION);
  return putSmall(block, putInteger(block, at, high), value - high * BILLION, 9);
}

const BILLION = 1e9;

function putSmall(block: Buffer, at: number, value: number, width: number): number {
  let digits = 1;
  for (let rest = value; rest >= 10; rest = (rest / 10) | 0) digits++;
  if (digits < width) digits = width;
  let rest = value;
  for (let i = at + digits - 1; i >= at; i--) {
    const next = (rest / 10) | 0;
    block[i] = 0x30 + rest - next * 10;
    rest = next;
  }
  return at + digits;
}

const EXACT_MICROS = 1e12;

/** Spelled as JSON spells `Math.round(seconds * 1e6) / 1000`, from the whole microseconds, without turning a fraction into text. */
export function putMilliseconds(block: Buffer, at: number, seconds: number): number {
  const micros = Math.round(seconds * 1e6);
  if (!(micros >= 0 && micros < EXACT_MICROS)) return at + block.write(JSON.stringify(micros / 1000), at, 'latin1');
  const whole = Math.floor(micros / 1000);
  let decimals = micros - whole * 1000;
  at = putInteger(block, at, whole);
  if (decimals === 0) return at;
  block[at++] = 0x2e; // .
  for (let unit = 100; decimals > 0; unit /= 10) {
    const digit = Math.floor(decimals / unit);
    block[at++] = 0x30 + digit;
    decimals -= digit * unit;
  }
  return at;
}
