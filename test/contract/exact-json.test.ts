import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { parseAnyJson, parseExactJson, parseExactNumber, parseFlatObject } from '../../src/contract/exact-json.js';

test('integer values become exact bigints however they are written', () => {
  const cases: [string, bigint][] = [
    ['0', 0n],
    ['-0', 0n],
    ['0.000', 0n],
    ['0e5', 0n],
    ['7', 7n],
    ['-7', -7n],
    ['1.0', 1n],
    ['1e3', 1000n],
    ['1E+3', 1000n],
    ['2000e-3', 2n],
    ['12.50e1', 125n],
    ['1.5e1', 15n],
    ['100e-2', 1n],
    ['9007199254740993', 9007199254740993n],
    ['9223372036854775807', 9223372036854775807n],
    ['-9223372036854775808', -9223372036854775808n],
    ['9999999999999999999', 9999999999999999999n],
  ];
  for (const [text, value] of cases) assert.equal(parseExactNumber(text), value, text);
});

test('fractions and integers too long for 64 bits stay doubles', () => {
  const cases: [string, number][] = [
    ['1.5', 1.5],
    ['-0.25', -0.25],
    ['1e-400', 0],
    ['9007199254740993.5', 9007199254740994],
    ['10000000000000000000', 1e19],
    ['1e400', Infinity],
    ['-1e400', -Infinity],
    ['1e99999999999999999999', Infinity],
  ];
  for (const [text, value] of cases) assert.equal(parseExactNumber(text), value, text);
});

test('parseExactJson keeps every digit and refuses what JSON.parse would let through', () => {
  assert.deepEqual(parseExactJson('{"id":9007199254740993,"n":[1.5,2]}'), { id: 9007199254740993n, n: [1.5, 2n] });
  assert.throws(() => parseExactJson('{"a":1,"a":2}'), SyntaxError);
  assert.throws(() => parseExactJson('{"__proto__":{}}'), SyntaxError);
  assert.throws(() => parseExactJson('{"\\u005f_proto__":{}}'), SyntaxError);
  assert.throws(() => parseExactJson('{"a":{"constructor":{"prototype":{}}}}'), SyntaxError);
  assert.throws(() => parseExactJson(' '), { message: 'the body is empty' });
  assert.throws(() => parseExactJson('NaN'), SyntaxError);
  assert.equal(Object.getPrototypeOf(parseExactJson('{"a":1}')), Object.prototype);
});

test('the fast path for flat objects answers what the general path answers, on generated texts', () => {
  const nearDoubleLimit = fc.bigInt({ min: 2n ** 53n - 4096n, max: 2n ** 53n + 4096n }).chain((n) => fc.constantFrom(n, -n));
  const integer = fc.oneof(
    fc.bigInt({ min: -(10n ** 21n), max: 10n ** 21n }).map(String),
    fc.bigInt({ min: -(10n ** 17n), max: 10n ** 17n }).map(String),
    nearDoubleLimit.map(String),
    fc.constantFrom('0', '-0', '00', '01', '-', '1.0', '1e3', '2E-1', '9223372036854775808', '999999999999999', '-99999999999999', '1000000000000000'),
  );
  const primitive = fc.oneof(integer, fc.string().map((s) => JSON.stringify(s)), fc.constantFrom('true', 'false', 'null', 'tru', 'nul', '"\\u0000"', '"\\ud800"', '"a\\"b"', '"raw\ttab"', '"raw\u0001"', '"\u001f"'));
  const space = fc.constantFrom('', ' ', '\n', '\t', '\r\n', '\u00a0');
  const key = fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom('id', 'name', 'tag', '__proto__', 'constructor', 'a\\u0062', 'x"y'));
  const member = fc.tuple(space, key, space, primitive, space).map(([a, k, b, v, c]) => `${a}${JSON.stringify(k).replace('\\\\u', '\\u')}${b}:${v}${c}`);
  const flat = fc.tuple(space, fc.array(member, { maxLength: 20 }), space, fc.constantFrom('', ',', '}', 'x')).map(([a, members, b, tail]) => `${a}{${members.join(',')}}${b}${tail === '}' || tail === 'x' ? tail : ''}`);
  // A flat object with one character deleted, added or replaced: a missing quote, colon or comma, a key
  // without quotes, a stray bracket or escape, each of which the fast path must hand to the general path.
  const damaged = fc
    .tuple(flat, fc.nat(), fc.constantFrom('delete', 'insert', 'replace'), fc.constantFrom(...'{}[]":,\\-.0123456789eE tfnua'))
    .map(([text, at, how, character]) => {
      const i = at % (text.length + 1);
      return text.slice(0, i) + (how === 'delete' ? '' : character) + text.slice(how === 'insert' ? i : i + 1);
    });
  const texts = fc.oneof(flat, damaged, fc.json(), fc.string());
  fc.assert(
    fc.property(texts, (text) => {
      const outcome = (parse: (text: string) => unknown) => {
        try {
          return { value: parse(text) };
        } catch (error) {
          return { error: (error as Error).name };
        }
      };
      const general = outcome(parseAnyJson);
      assert.deepEqual(outcome(parseExactJson), general, text);
      if ('error' in general) assert.equal(parseFlatObject(text), undefined, `the fast path took ${text}`);
    }),
    { numRuns: 20_000 },
  );
});

test('the fast path takes a plant, and hands every digit of its id to BigInt', () => {
  assert.deepEqual(parseFlatObject('{"id":9223372036854775807,"name":"Monstera deliciosa","tag":"aroid"}'), {
    id: 9223372036854775807n,
    name: 'Monstera deliciosa',
    tag: 'aroid',
  });
  assert.deepEqual(parseFlatObject(' { "id" : -9007199254740993 , "name" : "a\\"b" } '), { id: -9007199254740993n, name: 'a"b' });
  for (const left of ['{"id":1.5}', '{"id":1e3}', '{"id":[1]}', '{"a":{"b":1}}', '{"a":1,"a":1}', '{"__proto__":1}', '{"\\u0061":1}', '{"id":12345678901234567890}']) {
    assert.equal(parseFlatObject(left), undefined, left);
  }
});
