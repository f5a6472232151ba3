// npx tsx bench/signing-key.ts [--rounds N] [--signatures N]: what one delivery's Standard Webhooks
// signature costs the dispatcher, with the key given to createHmac as the secret's bytes (a Buffer)
// and as a KeyObject, as the dispatcher now keeps it. Rounds alternate the two; the medians are
// printed in µs a signature, with the Node.js version, since that is what the difference depends on.
import { createHmac, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { median } from './median.js';
import { newSecret, secretKey } from '../src/webhooks/signature.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '7' },
    signatures: { type: 'string', default: '100000' },
  },
});
const rounds = Number(values.rounds);
const signatures = Number(values.signatures);

const secret = newSecret();
const keyObject = secretKey(secret);
const bytes = Buffer.from(keyObject.export());
// A message as the dispatcher signs it: `<id>.<timestamp>.<body>`, with a plant.created body.
const body = JSON.stringify({ type: 'plant.created', timestamp: new Date().toISOString(), data: { id: '9007199254740993', name: 'Monstera', tag: 'aroid' } });
const signed = `msg_${randomBytes(12).toString('hex')}.${Math.floor(Date.now() / 1000)}.${body}`;

function microsecondsEach(key: Buffer | KeyObject): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < signatures; i++) createHmac('sha256', key).update(signed).digest('base64');
  return Number(process.hrtime.bigint() - started) / 1000 / signatures;
}

// The same signature either way, or the comparison means nothing.
if (createHmac('sha256', bytes).update(signed).digest('base64') !== createHmac('sha256', keyObject).update(signed).digest('base64')) {
  throw new Error('the Buffer and the KeyObject sign differently');
}
const buffer: number[] = [];
const object: number[] = [];
for (let round = 0; round < rounds; round++) {
  buffer.push(microsecondsEach(bytes));
  object.push(microsecondsEach(createSecretKey(bytes)));
}
const b = median(buffer);
const o = median(object);
process.stdout.write(
  `Node.js ${process.version}, ${rounds} rounds of ${signatures} signatures, medians:\n` +
    `  key as a Buffer:    ${b.toFixed(2)} µs a signature\n` +
    `  key as a KeyObject: ${o.toFixed(2)} µs a signature (${(b - o).toFixed(2)} µs less)\n`,
);
