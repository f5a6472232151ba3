import { randomFillSync } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** What a well-formed incoming X-Request-Id looks like: short, printable, no spaces or quotes. */
const WELL_FORMED = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/**
 * The request id: the client's (or proxy's) `X-Request-Id` when it is well
 * formed, so that one id follows a request through every hop; otherwise a new
 * UUID. It is on every log line the request causes and echoed in the answer.
 * Either way it holds no character that JSON would escape, so the access line
 * writes it between quotes as it is.
 */
export function requestId(request: IncomingMessage): string {
  const incoming = request.headers['x-request-id'];
  return typeof incoming === 'string' && WELL_FORMED.test(incoming) ? incoming : randomRequestId();
}

/** Ids made from one fill of random bytes: one call into the CSPRNG for this many requests. */
const IDS_PER_FILL = 256;
const randomBytes = Buffer.alloc(16 * IDS_PER_FILL);
let nextId = IDS_PER_FILL;
/** The id's 36 characters are written here, then read out as one string. */
const idText = Buffer.alloc(36);
/** Two lowercase hex digits for every byte value, as character codes. */
const HEX = Uint8Array.from({ length: 512 }, (_, i) => '0123456789abcdef'.charCodeAt(i % 2 === 0 ? (i >> 1) >> 4 : (i >> 1) & 15));
const DASH = 0x2d;

/**
 * A version 4 UUID (RFC 9562, section 5.4): 122 random bits from the
 * CSPRNG, as crypto.randomUUID makes one. It is spelled here because
 * randomUUID returns its 36 characters as a chain of small strings joined
 * together, which node:http's header check then copies into one string
 * again on every answer; written into a buffer and read out once, the id is
 * one string from the start (bench/results/2026-11-24-sqlite-access-line-bytes-measurements.md).
 */
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
