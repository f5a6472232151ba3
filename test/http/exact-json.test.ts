import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseExactJson, parseExactNumber } from '../../src/http/exact-json.js';

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
