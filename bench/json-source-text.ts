// npx tsx bench/json-source-text.ts: the exact JSON reader of src/contract/exact-json.ts beside
// JSON.parse reading each number from its source text (a reviver's `context.source`, Node.js 22+),
// per body, best of 7 runs; then the inputs on which the two answer differently. Pin it with
// `taskset -c 0` for steadier figures.
import { parseAnyJson, parseExactJson, parseExactNumber } from '../src/contract/exact-json.js';

type Reviver = (this: unknown, key: string, value: unknown, context: { source?: string }) => unknown;
const parse = JSON.parse as (text: string, reviver: Reviver) => unknown;

/** JSON.parse with every number read from its text: integers as bigints, as the service's reader does. */
function sourceTextReader(text: string): unknown {
  return parse(text, (_key, value, context) => (typeof value === 'number' ? parseExactNumber(context.source!) : value));
}

function best(calls: number, run: () => unknown): number {
  let fastest = Infinity;
  for (let round = 0; round < 7; round++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) run();
    fastest = Math.min(fastest, Number(process.hrtime.bigint() - started) / calls);
  }
  return fastest / 1000;
}

const bodies = {
  'a plant': '{"id":9007199254740993,"name":"Monstera deliciosa","tag":"indoor"}',
  'a nested body': '{"id":9007199254740993,"name":"Monstera","tag":"indoor","extra":{"a":[1,2,{"b":3.5}],"c":"d"}}',
};
process.stdout.write('| body | today\'s reader µs | its general path µs | JSON.parse with source text µs |\n|---|---|---|---|\n');
for (const [name, body] of Object.entries(bodies)) {
  const today = best(200_000, () => parseExactJson(body));
  const general = best(200_000, () => parseAnyJson(body));
  const sourceText = best(200_000, () => sourceTextReader(body));
  process.stdout.write(`| ${name} | ${today.toFixed(3)} | ${general.toFixed(3)} | ${sourceText.toFixed(3)} |\n`);
}

const outcome = (read: (text: string) => unknown, text: string) => {
  try {
    return JSON.stringify(read(text), (_key, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value));
  } catch (error) {
    return `refused (${(error as Error).name})`;
  }
};
process.stdout.write('\n| input | today\'s reader | JSON.parse with source text |\n|---|---|---|\n');
for (const text of ['{"id":1,"id":2}', '{"id":1,"name":"a","name":"b"}', '{"__proto__":{"x":1}}', '{"id":1e400}']) {
  process.stdout.write(`| \`${text}\` | ${outcome(parseExactJson, text)} | ${outcome(sourceTextReader, text)} |\n`);
}
