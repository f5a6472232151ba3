// Makes what the service and its types are built from out of the one
// contract, openapi/plantstore.yaml: the same document as JSON (what the
// server loads at start, so that it needs no YAML parser, which costs about
// 8 MiB of memory), and the TypeScript types. With --check it writes nothing
// and fails when the committed files differ from what it would make.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';

const CONTRACT = 'openapi/plantstore.yaml';
const JSON_DOCUMENT = 'openapi/plantstore.json';
const TYPES = 'src/http/generated/openapi.ts';
const check = process.argv.includes('--check');

const dir = mkdtempSync(join(tmpdir(), 'openapi-generate-'));
try {
  const made = {
    [JSON_DOCUMENT]: `${JSON.stringify(parse(readFileSync(CONTRACT, 'utf8')), null, 2)}\n`,
    [TYPES]: types(),
  };
  for (const [file, content] of Object.entries(made)) {
    if (!check) {
      writeFileSync(file, content);
    } else if (content !== readFileSync(file, 'utf8')) {
      console.error(`${file} is out of date with ${CONTRACT}: run npm run openapi:generate and commit it`);
      process.exitCode = 1;
    }
  }
  if (check && process.exitCode !== 1) console.log(`${Object.keys(made).join(' and ')} match ${CONTRACT}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

function types() {
  const output = join(dir, 'openapi.ts');
  execFileSync('npx', ['--no-install', 'openapi-typescript', CONTRACT, '--output', output], { stdio: 'ignore' });
  return readFileSync(output, 'utf8');
}
