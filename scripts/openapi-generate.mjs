// Makes what the service, its types and the client's types are built from
// out of the one contract, openapi/plantstore.yaml: the same document as JSON
// (what the server loads at start, so that it needs no YAML parser, which
// costs about 8 MiB of memory), and the TypeScript types, once for the
// server and once for the client package. With --check it writes nothing and
// fails when the committed files differ from what it would make.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parse } from 'yaml';

const CONTRACT = 'openapi/plantstore.yaml';
const JSON_DOCUMENT = 'openapi/plantstore.json';
const TYPES = 'src/contract/generated/openapi.ts';
const CLIENT_TYPES = 'packages/client/src/generated/openapi.ts';
const check = process.argv.includes('--check');

const dir = mkdtempSync(join(tmpdir(), 'openapi-generate-'));
try {
  const contractTypes = types();
  const made = {
    [JSON_DOCUMENT]: `${exactJson(parse(readFileSync(CONTRACT, 'utf8'), { intAsBigInt: true }))}\n`,
    [TYPES]: contractTypes,
    [CLIENT_TYPES]: contractTypes,
  };
  for (const [file, content] of Object.entries(made)) {
    if (!check) {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, content);
    } else if (content !== readFileSync(file, 'utf8')) {
      console.error(`${file} is out of date with ${CONTRACT}: run npm run openapi:generate and commit it`);
      process.exitCode = 1;
    }
  }
  if (check && process.exitCode !== 1) console.log(`${Object.keys(made).join(', ')} match ${CONTRACT}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

// Integers are read as bigint and written with their digits, so that an
// example id beyond 2^53 stays itself in the JSON.
function exactJson(document) {
  const marker = '\u0000bigint:';
  const text = JSON.stringify(document, (_key, value) => (typeof value === 'bigint' ? `${marker}${value}` : value), 2);
  return text.replace(/"\\u0000bigint:(-?\d+)"/g, '$1');
}

function types() {
  const output = join(dir, 'openapi.ts');
  execFileSync('npx', ['--no-install', 'openapi-typescript', CONTRACT, '--output', output], { stdio: 'ignore' });
  return readFileSync(output, 'utf8');
}
