import assert from 'node:assert/strict';
import { test } from 'node:test';
import { limitKey } from '../../src/http/limit-key.js';

test('IPv6 addresses of one /64 share a key, however written', () => {
  const oneSubnet = ['2001:db8:1:2::1', '2001:db8:1:2::abcd', '2001:0DB8:0001:0002:ffff:ffff:ffff:ffff', '2001:db8:1:2:0:0:0:7', '2001:db8:1:2::5%eth0', '2001:db8:1:2::'];
  assert.deepEqual(new Set(oneSubnet.map(limitKey)), new Set(['2001:db8:1:2::/64']));
});

test('an IPv6 address\'s key is its first four groups, wherever its `::` stands', () => {
  const keys: [string, string][] = [
    ['2001:db8::1:2:3:4:5', '2001:db8:0:1::/64'],
    ['::1', '0:0:0:0::/64'],
    ['::', '0:0:0:0::/64'],
    ['1:2:3:4:5:6:7:8', '1:2:3:4::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    // IPv4-compatible (deprecated, RFC 4291 2.5.5.1), not IPv4-mapped: an IPv6 address like any other.
    ['::198.51.100.42', '0:0:0:0::/64'],
    ['64:ff9b::198.51.100.42', '64:ff9b:0:0::/64'],
  ];
  for (const [address, key] of keys) assert.equal(limitKey(address), key, address);
});

test('IPv6 addresses of different /64s have different keys', () => {
  const subnets = ['2001:db8:1:2::1', '2001:db8:1:3::1', '2001:db8:2:2::1', '2001:db9:1:2::1', '::1', '1::1'];
  assert.equal(new Set(subnets.map(limitKey)).size, subnets.length);
});

test('an IPv4 address is its own key, and its IPv4-mapped IPv6 forms agree with it', () => {
  for (const address of ['203.0.113.7', '::ffff:203.0.113.7', '::FFFF:203.0.113.7', '::ffff:cb00:7107', '0:0:0:0:0:ffff:203.0.113.7']) {
    assert.equal(limitKey(address), '203.0.113.7', address);
  }
  assert.equal(limitKey('::ffff:198.51.100.42'), '198.51.100.42');
  assert.notEqual(limitKey('203.0.113.8'), limitKey('203.0.113.7'), 'IPv4 addresses are not grouped');
  assert.notEqual(limitKey('::ffff:203.0.113.8'), limitKey('::ffff:203.0.113.7'), 'nor are mapped ones');
});

test('what is no IP address is its own key', () => {
  assert.equal(limitKey('unknown'), 'unknown');
  assert.equal(limitKey(''), '');
});
