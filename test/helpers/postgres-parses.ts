/** A statement a PostgreSQL client asked the server to parse: its name (empty for the unnamed statement) and text. */
export interface ParsedStatement {
  name: string;
  text: string;
}

/** The codes of the requests a client may send before its startup message (SSL, GSS encryption); the server answers each with one byte. */
const PRE_STARTUP_REQUESTS = new Set([80_877_103, 80_877_104]);
const PARSE = 0x50; // 'P'

/**
 * Reads the Parse messages out of the bytes one client sends on one
 * connection (frontend messages of the PostgreSQL protocol, version 3) and
 * adds each to `into`.
 */
export function readParses(into: ParsedStatement[]): (chunk: Buffer) => void {
  let pending = Buffer.alloc(0);
  let started = false;
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    for (;;) {
      // The startup message and the requests before it have a length but no type byte.
      const headerBytes = started ? 5 : 4;
      if (pending.length < headerBytes) return;
      const length = pending.readInt32BE(headerBytes - 4) + headerBytes - 4;
      if (pending.length < length) return;
      if (!started) started = !PRE_STARTUP_REQUESTS.has(pending.readInt32BE(4));
      else if (pending[0] === PARSE) {
        const nameEnd = pending.indexOf(0, 5);
        const textEnd = pending.indexOf(0, nameEnd + 1);
        into.push({ name: pending.toString('utf8', 5, nameEnd), text: pending.toString('utf8', nameEnd + 1, textEnd) });
      }
      pending = pending.subarray(length);
    }
  };
}
