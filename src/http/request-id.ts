import { randomFillSync } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const WELL_FORMED = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** A well-formed incoming id is kept so one id follows a request through every hop; neither kind holds a character JSON escapes. */
export function requestId(request: IncomingMessage): string {
  const incoming = request.headers['x-request-id'];
  return typeof incoming === 'string' && WELL_FORMED.test(incoming) ? incoming : randomRequestId();
}

/** One call into the CSPRNG for this many ids. */
const IDS_PER_FILL = 256;
const randomBytes = Buffer.alloc(16 * IDS_PER_FILL);
let nextId = IDS_PER_FILL;
const idText = Buffer.alloc(36);
const HEX = Uint8Array.from({ length: 512 }, (_, i) => '0123456789abcdef'.charCodeAt(i % 2 === 0 ? (i >> 1) >> 4 : (i >> 1) & 15));
const DASH = 0x2d;

/** UUIDv4 (RFC 9562) read out as one string: crypto.randomUUID's is a chain of pieces that node:http's header check copies per answer. */
export function randomRequestId(): string {
  if (nextId === IDS_PER_FILL) {
    randomFillSync(randomBytes);
    nextId = 0;
  }
  const from = 16 * nextId++;
  let at = 0;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) idText[at++] = DASH;
    let byte = randomBytes[from + i]!;
    if (i === 6) byte = (byte & 0x0f) | 0x40; // the version, 4
    else if (i === 8) byte = (byte & 0x3f) | 0x80; // the variant, RFC 9562's
    idText[at++] = HEX[2 * byte]!;
    idText[at++] = HEX[2 * byte + 1]!;
  }
  return idText.toString('latin1', 0, 36);
}
