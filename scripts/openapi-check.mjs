// Fails when src/http/generated/openapi.ts is not what `npm run openapi:types`
// makes from openapi/plantstore.yaml: the committed types must follow the contract.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const committed = 'src/http/generated/openapi.ts';
const dir = mkdtempSync(join(tmpdir(), 'openapi-check-'));
try {
  const fresh = join(dir, 'openapi.ts');
  execFileSync('npx', ['--no-install', 'openapi-typescript', 'openapi/plantstore.yaml', '--output', fresh], { stdio: 'ignore' });
  if (readFileSync(fresh, 'utf8') !== readFileSync(committed, 'utf8')) {
    console.error(`${committed} is out of date with openapi/plantstore.yaml: run npm run openapi:types and commit it`);
    process.exit(1);
  }
  console.log(`${committed} matches openapi/plantstore.yaml`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
