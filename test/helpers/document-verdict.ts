import { contractAjv } from './openapi.js';

/**
 * An independent judge of a POST /plants request by the OpenAPI document,
 * sharing no code with the server: the body read strictly as JSON (RFC 8259)
 * by the reader below, which keeps what `JSON.parse` drops (each number as
 * written, each repeated key); the NewPlant schema checked by Ajv on the
 * document; `format: int64` checked on the exact value, since Ajv's int64
 * format takes any integer a double holds (1e300 included); and the rules the
 * document's 400 answer states beyond the schema.
 */
export type Verdict =
  | { accepted: true; plant: { id: bigint; name: string; tag?: string } }
  | { accepted: false; reason: string };

const newPlantSchema = contractAjv.compile({ $ref: 'plantstore#/components/schemas/NewPlant' });

/** The nesting the document's 400 answer allows. */
const MAX_NESTING = 1000;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

export function documentVerdict(text: string): Verdict {
  let root: Json;
  try {
    root = readJson(text);
  } catch (error) {
    return { accepted: false, reason: (error as Error).message };
  }
  const refused = refusedBeyondSchema(root);
  if (refused !== undefined) return { accepted: false, reason: refused };
  if (!newPlantSchema(plain(root))) return { accepted: false, reason: contractAjv.errorsText(newPlantSchema.errors) };
  const members = new Map((root as JsonObject).members);
  const id = members.get('id') as JsonNumber;
  const value = exactInteger(id.text);
  if (value === undefined || value < INT64_MIN || value > INT64_MAX) return { accepted: false, reason: `id ${id.text} is not an int64` };
  const name = members.get('name') as string;
  const tag = members.get('tag') as string | undefined;
  for (const field of [name, tag]) {
    if (field !== undefined && (!field.isWellFormed() || field.includes('\u0000'))) {
      return { accepted: false, reason: 'a name or tag with a lone surrogate or U+0000' };
    }
  }
  return { accepted: true, plant: tag === undefined ? { id: value, name } : { id: value, name, tag } };
}

// RFC 9110, section 8.3.1: type "/" subtype *( OWS ";" OWS [ parameter ] ), a parameter's value a token or a quoted string.
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const QUOTED = '"(?:[\\t !#-\\[\\]-~\\x80-\\xff]|\\\\[\\t -~\\x80-\\xff])*"';
const MEDIA_TYPE = new RegExp(`^(${TOKEN}/${TOKEN})((?:[ \\t]*;[ \\t]*(?:${TOKEN}=(?:${TOKEN}|${QUOTED}))?)*)$`);
const PARAMETER = new RegExp(`(${TOKEN})=(${TOKEN}|${QUOTED})`, 'g');

/** Whether a Content-Type is the document's `application/json`, in UTF-8 if it names a charset. */
export function mediaTypeAccepted(header: string | undefined): boolean {
  const match = header === undefined ? null : MEDIA_TYPE.exec(header.replace(/^[ \t]+|[ \t]+$/g, ''));
  if (match === null || match[1]!.toLowerCase() !== 'application/json') return false;
  for (const [, name, value] of match[2]!.matchAll(PARAMETER)) {
    const charset = value!.replace(/^"(.*)"$/, '$1').toLowerCase();
    if (name!.toLowerCase() === 'charset' && charset !== 'utf-8' && charset !== 'utf8') return false;
  }
  return true;
}

class JsonNumber {
  constructor(readonly text: string) {}
}
class JsonObject {
  constructor(readonly members: [string, Json][]) {}
}
type Json = null | boolean | string | JsonNumber | JsonObject | Json[];

/** RFC 8259's tokens, each as long as it goes; anything else is not JSON. */
const JSON_TOKEN =
  /[ \t\n\r]*([{}[\]:,]|true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|"[^"\\\u0000-\u001f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\u0000-\u001f]*)*")/y;

function readJson(text: string): Json {
  const tokens: string[] = [];
  let end = 0;
  JSON_TOKEN.lastIndex = 0;
  for (let match = JSON_TOKEN.exec(text); match !== null; match = JSON_TOKEN.exec(text)) {
    tokens.push(match[1]!);
    end = JSON_TOKEN.lastIndex;
  }
  if (!/^[ \t\n\r]*$/.test(text.slice(end))) throw new Error('not JSON: a character no token starts with');
  let at = 0;
  const expect = (wanted: string) => {
    if (tokens[at++] !== wanted) throw new Error(`not JSON: expected ${wanted}`);
  };
  const value = (depth: number): Json => {
    const token = tokens[at++];
    if (token === undefined) throw new Error('not JSON: it ends early');
    if (token === '{' || token === '[') {
      if (depth === MAX_NESTING) throw new Error(`nested deeper than ${MAX_NESTING} levels`);
      const close = token === '{' ? '}' : ']';
      const items: [string, Json][] = [];
      if (tokens[at] === close) {
        at++;
      } else {
        do {
          let key = '';
          if (token === '{') {
            const name = tokens[at++];
            if (name === undefined || !name.startsWith('"')) throw new Error('not JSON: a key is not a string');
            key = JSON.parse(name) as string;
            expect(':');
          }
          items.push([key, value(depth + 1)]);
        } while (tokens[at++] === ',');
        if (tokens[at - 1] !== close) throw new Error(`not JSON: expected ${close}`);
      }
      return token === '{' ? new JsonObject(items) : items.map(([, item]) => item);
    }
    if (token.startsWith('"')) return JSON.parse(token) as string;
    if (token === 'true' || token === 'false') return token === 'true';
    if (token === 'null') return null;
    if (/^[-\d]/.test(token)) return new JsonNumber(token);
    throw new Error(`not JSON: unexpected ${token}`);
  };
  const root = value(0);
  if (at !== tokens.length) throw new Error('not JSON: more after the value');
  return root;
}

/** The document's 400 beyond the schema: a key twice with different values, a `__proto__` or `constructor.prototype` key. */
function refusedBeyondSchema(node: Json): string | undefined {
  if (Array.isArray(node)) {
    for (const item of node) {
      const refused = refusedBeyondSchema(item);
      if (refused !== undefined) return refused;
    }
    return undefined;
  }
  if (!(node instanceof JsonObject)) return undefined;
  const seen = new Map<string, string>();
  for (const [key, value] of node.members) {
    if (key === '__proto__') return 'a __proto__ key';
    if (key === 'constructor' && value instanceof JsonObject && value.members.some(([name]) => name === 'prototype')) {
      return 'a constructor.prototype key';
    }
    const canonical = canonicalJson(value);
    if (seen.has(key) && seen.get(key) !== canonical) return `the key ${JSON.stringify(key)} twice with different values`;
    seen.set(key, canonical);
    const refused = refusedBeyondSchema(value);
    if (refused !== undefined) return refused;
  }
  return undefined;
}

/** A text equal for equal JSON values: numbers by their exact value, objects whatever their order. */
function canonicalJson(node: Json): string {
  if (node instanceof JsonNumber) {
    const { sign, digits, exponent } = exactDecimal(node.text);
    return `${sign}${digits}e${exponent}`;
  }
  if (node instanceof JsonObject) {
    const members = new Map(node.members.map(([key, value]) => [key, canonicalJson(value)]));
    return `{${[...members].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(',')}}`;
  }
  if (Array.isArray(node)) return `[${node.map(canonicalJson).join(',')}]`;
  return JSON.stringify(node);
}

/** The value as Ajv sees it: plain JSON, each number a double, the last of a repeated key. */
function plain(node: Json): unknown {
  if (node instanceof JsonNumber) return Number(node.text);
  if (node instanceof JsonObject) return Object.fromEntries(node.members.map(([key, value]) => [key, plain(value)]));
  if (Array.isArray(node)) return node.map(plain);
  return node;
}

/** A JSON number as significant digits times a power of ten, exactly: `1.50e1` is 15e0, `-0.0` is 0e0. */
function exactDecimal(text: string): { sign: '' | '-'; digits: string; exponent: bigint } {
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text)!;
  const digits = (whole + fraction).replace(/^0+/, '');
  if (digits === '') return { sign: '', digits: '0', exponent: 0n };
  const significant = digits.replace(/0+$/, '');
  return { sign: sign as '' | '-', digits: significant, exponent: BigInt(exponent) - BigInt(fraction.length) + BigInt(digits.length - significant.length) };
}

/** The number's value when it is an integer of at most 20 digits; undefined otherwise (a fraction, or far outside int64). */
function exactInteger(text: string): bigint | undefined {
  const { sign, digits, exponent } = exactDecimal(text);
  if (exponent < 0n || BigInt(digits.length) + exponent > 20n) return undefined;
  return BigInt(`${sign}${digits}${'0'.repeat(Number(exponent))}`);
}
