import assert from 'node:assert/strict';
import { test } from 'node:test';
import { retryDelayMs } from '../../src/webhooks/webhook-dispatcher.js';
import { newSecret, secretKey, signatureHeader } from '../../src/webhooks/signature.js';
import { webhookUrlProblem } from '../../src/webhooks/subscriptions.js';

test('signatures match the Standard Webhooks reference example', () => {
  // The example of the Standard Webhooks libraries' own tests.
  const key = secretKey('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
  const header = signatureHeader([key], 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}');
  assert.equal(header, 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
});

test('during a rotation the header carries one signature per secret, separated by a space', () => {
  const header = signatureHeader([secretKey(newSecret()), secretKey(newSecret())], 'msg_1', 1, '{}');
  assert.match(header, /^v1,[A-Za-z0-9+/]{43}= v1,[A-Za-z0-9+/]{43}=$/);
});

test('a new secret is whsec_ and the base64 of 32 random bytes', () => {
  const secrets = new Set(Array.from({ length: 20 }, () => newSecret()));
  assert.equal(secrets.size, 20);
  for (const secret of secrets) {
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(secretKey(secret).symmetricKeySize, 32);
  }
});

test('retries back off exponentially with full jitter, between the minimum and the maximum', () => {
  const options = { minMs: 100, maxMs: 1000 };
  assert.equal(retryDelayMs(1, options, () => 1), 100, 'the first retry waits the minimum');
  assert.equal(retryDelayMs(2, options, () => 1), 200);
  assert.equal(retryDelayMs(3, options, () => 1), 400);
  assert.equal(retryDelayMs(4, options, () => 0), 100, 'jitter reaches down to the minimum');
  assert.equal(retryDelayMs(10, options, () => 1), 1000, 'capped at the maximum');
  assert.equal(retryDelayMs(5000, options, () => 0.5), 550, 'a huge attempt number does not overflow');
});

test('a subscription URL is http:// or https://, without credentials', () => {
  assert.equal(webhookUrlProblem('https://example.com/hooks?x=1'), undefined);
  assert.equal(webhookUrlProblem('http://127.0.0.1:8080/'), undefined);
  assert.match(webhookUrlProblem('ftp://example.com/')!, /http:\/\/ or https:\/\//);
  assert.match(webhookUrlProblem('example.com/hooks')!, /absolute/);
  assert.match(webhookUrlProblem('https://user:pw@example.com/')!, /without credentials/);
  assert.match(webhookUrlProblem('https://user@example.com/')!, /without credentials/);
});
