import { parse } from 'lossless-json';
import secureJson from 'secure-json-parse';

/**
 * Parses JSON without losing a digit: an integer-valued number (`42`, `-0`, `1.0`, `1e3`) becomes a bigint, any
 * other a double (`JSON.parse` rounds past 2^53). Refuses duplicate keys with different values, `__proto__` and
 * `constructor.prototype` keys (prototype poisoning, as Fastify's parser does) and nesting past `MAX_NESTING`
 * (RFC 8259, section 9, lets a parser set that limit). Throws a SyntaxError on bad input (a RangeError should the stack still run out).
 */
export function parseExactJson(text: string): unknown {
  return parseFlatObject(text) ?? parseAnyJson(text);
}

/** parseExactJson's general path, for every text: lossless-json, with the checks above. */
export function parseAnyJson(text: string): unknown {
  if (text.trim() === '') throw new SyntaxError('the body is empty');
  checkNesting(text);
  const value = parse(text, null, parseExactNumber);
  if (value !== null && typeof value === 'object') {
    secureJson.scan(value, { protoAction: 'error', constructorAction: 'error' });
  }
  return value;
}

/**
 * The deepest nesting a body may have. lossless-json recurses, so the depth it reaches unaided varies with free
 * stack and the JIT; this limit is always within reach, and far beyond any plant.
 */
export const MAX_NESTING = 1000;

function checkNesting(text: string): void {
  // Each level opens with a bracket: a text with no more brackets than the limit cannot pass it. A
  // plant's body is shorter than the limit, and indexOf skips a long name much faster than the loop.
  if (text.length <= MAX_NESTING || openingBrackets(text, MAX_NESTING + 1) <= MAX_NESTING) return;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (inString) {
      if (code === 0x5c) i++; // a backslash: the next character is escaped
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) {
      inString = true;
    } else if (code === 0x5b || code === 0x7b) {
      if (++depth > MAX_NESTING) throw new SyntaxError(`arrays and objects are nested deeper than ${MAX_NESTING} levels`);
    } else if (code === 0x5d || code === 0x7d) {
      depth--;
    }
  }
}

function openingBrackets(text: string, enough: number): number {
  let count = 0;
  for (const bracket of ['[', '{']) {
    for (let at = text.indexOf(bracket); at !== -1 && count < enough; at = text.indexOf(bracket, at + 1)) count++;
  }
  return count;
}

const NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** Past 19 digits no integer fits in 64 bits; such values stay doubles and fail an int64 check. */
const MAX_INT64_DIGITS = 19;

export function parseExactNumber(text: string): bigint | number {
  const match = NUMBER.exec(text);
  if (match === null) return Number(text);
  const [, sign = '', whole = '', fraction = '', exponentText = '0'] = match;
  const allDigits = whole + fraction;
  const significant = allDigits.replace(/^0+/, '').replace(/0+$/, '');
  if (significant === '') return 0n;
  // value = significant × 10^scale, once the trailing zeros are counted back in.
  const trailingZeros = allDigits.length - allDigits.replace(/0+$/, '').length;
  const scale = Number(exponentText) - fraction.length + trailingZeros;
  if (scale < 0 || significant.length + scale > MAX_INT64_DIGITS) return Number(text);
  return BigInt(sign + significant + '0'.repeat(scale));
}

/** Every integer of at most this many digits is exact in a double (10^15 < 2^53), so it can be summed digit by digit. */
const SAFE_DIGITS = 15;

/**
 * The fast path, in one pass: a flat object whose numbers are plain integers, such as every plant. For anything
 * else (a nested value, a fraction or exponent, past 19 digits, an escaped or repeated key, `__proto__` or
 * `constructor`, invalid JSON) it answers undefined, for the general path to decide and word the error. Both
 * paths answer alike on every text, as test/contract/exact-json.test.ts checks on generated ones.
 */
export function parseFlatObject(text: string): Record<string, unknown> | undefined {
  let i = skipWhitespace(text, 0);
  if (text.charCodeAt(i) !== 0x7b) return undefined; // {
  i = skipWhitespace(text, i + 1);
  const value: Record<string, unknown> = {};
  if (text.charCodeAt(i) === 0x7d) return skipWhitespace(text, i + 1) === text.length ? value : undefined; // {}
  for (;;) {
    if (text.charCodeAt(i) !== 0x22) return undefined; // a key
    const keyEnd = plainStringEnd(text, i + 1);
    if (keyEnd === -1) return undefined;
    const key = text.slice(i + 1, keyEnd);
    if (key === '__proto__' || key === 'constructor' || Object.hasOwn(value, key)) return undefined;
    i = skipWhitespace(text, keyEnd + 1);
    if (text.charCodeAt(i) !== 0x3a) return undefined; // :
    i = skipWhitespace(text, i + 1);
    const first = text.charCodeAt(i);
    if (first === 0x22) {
      const end = plainStringEnd(text, i + 1);
      if (end !== -1) {
        value[key] = text.slice(i + 1, end);
        i = end + 1;
      } else {
        // An escape (or a control character, which JSON.parse refuses): JSON.parse reads the one string.
        const quoted = stringEnd(text, i + 1);
        if (quoted === -1) return undefined;
        try {
          value[key] = JSON.parse(text.slice(i, quoted));
        } catch {
          return undefined;
        }
        i = quoted;
      }
    } else if (first === 0x2d || (first >= 0x30 && first <= 0x39)) {
      const start = i;
      if (first === 0x2d) i++;
      const digits = i;
      let sum = 0;
      for (let code = text.charCodeAt(i); code >= 0x30 && code <= 0x39; code = text.charCodeAt(++i)) sum = sum * 10 + (code - 0x30);
      const count = i - digits;
      // JSON's integers: at least one digit, and no leading zero but 0 itself.
      if (count === 0 || (count > 1 && text.charCodeAt(digits) === 0x30) || count > MAX_INT64_DIGITS) return undefined;
      value[key] = count <= SAFE_DIGITS ? BigInt(first === 0x2d ? -sum : sum) : BigInt(text.slice(start, i));
    } else if (text.startsWith('true', i)) {
      value[key] = true;
      i += 4;
    } else if (text.startsWith('false', i)) {
      value[key] = false;
      i += 5;
    } else if (text.startsWith('null', i)) {
      value[key] = null;
      i += 4;
    } else {
      return undefined; // a nested value, or not JSON
    }
    i = skipWhitespace(text, i);
    const next = text.charCodeAt(i);
    i = skipWhitespace(text, i + 1);
    if (next === 0x7d) return i === text.length ? value : undefined; // }
    if (next !== 0x2c) return undefined; // ,
  }
}

/** The index of the closing quote of a string whose content starts at `from` and holds no escape or control character, or -1. */
function plainStringEnd(text: string, from: number): number {
  for (let i = from; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x22) return i;
    if (code === 0x5c || code < 0x20) return -1;
  }
  return -1;
}

function skipWhitespace(text: string, from: number): number {
  let i = from;
  for (let code = text.charCodeAt(i); code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09; code = text.charCodeAt(++i));
  return i;
}

/** The index after the closing quote of the string whose content starts at `from`, or -1. */
function stringEnd(text: string, from: number): number {
  // indexOf runs through a long name far faster than a loop; a quote after an odd run of backslashes is escaped.
  for (let quote = text.indexOf('"', from); quote !== -1; quote = text.indexOf('"', quote + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
  }
  return -1;
}
