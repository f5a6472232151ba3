import { parse } from 'lossless-json';
import secureJson from 'secure-json-parse';

/**
 * Parses JSON without losing a digit: every number whose value is an integer
 * (`42`, `-0`, `1.0`, `1e3`) becomes a bigint, any other number a double.
 * `JSON.parse` would round 9007199254740993 to 9007199254740992.
 *
 * Duplicate keys with different values are refused (lossless-json), and so
 * are `__proto__` and `constructor.prototype` keys, as Fastify's own parser
 * does against prototype poisoning.
 *
 * Throws a SyntaxError (or a RangeError for absurd nesting) on bad input.
 */
export function parseExactJson(text: string): unknown {
  if (text.trim() === '') throw new SyntaxError('the body is empty');
  const value = parse(text, null, parseExactNumber);
  if (value !== null && typeof value === 'object') {
    secureJson.scan(value, { protoAction: 'error', constructorAction: 'error' });
  }
  return value;
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
