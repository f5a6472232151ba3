import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';

/** A folder of its own for one test, removed when the test ends. */
export function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
