import type { TestContext } from 'node:test';

/** Where a missing program fails the test instead of skipping it: CI (CI=true) and PLANTSTORE_TEST_POSTGRES=require. */
export function harnessRequired(): boolean {
  return process.env['CI'] === 'true' || process.env['PLANTSTORE_TEST_POSTGRES'] === 'require';
}

/**
 * Whether the test can go on: true when `available`; otherwise the test is
 * skipped with `missing` as its one line, or, where the harness is required,
 * fails with it.
 */
export function requireOrSkip(t: TestContext, missing: string, available: boolean): boolean {
  if (available) return true;
  if (harnessRequired()) throw new Error(`${missing} (CI=true or PLANTSTORE_TEST_POSTGRES=require: this is a failure, not a skip)`);
  t.skip(missing);
  return false;
}
