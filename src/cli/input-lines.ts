/** One line of an input, without its newline. */
export interface InputLine {
  /** Its number, from 1. */
  number: number;
  /** Its text, decoded as UTF-8; undefined when it is longer than the limit, and was not kept. */
  text: string | undefined;
  /** The bytes of the input read up to its end, its newline included. */
  end: number;
}

const NEWLINE = 0x0a;

/**
 * The lines of `input` as they arrive, each yielded before the next chunk is read: a caller that awaits holds the
 * stream back, and memory holds one chunk and one line. A line past `maxBytes` is not kept (readline keeps any
 * length). Each line is decoded whole, so a split character reads right and non-UTF-8 bytes become U+FFFD, as in a body.
 */
export async function* inputLines(input: AsyncIterable<Buffer | string>, maxBytes: number): AsyncGenerator<InputLine> {
  let pieces: Buffer[] = [];
  let length = 0;
  let tooLong = false;
  let number = 0;
  let end = 0;

  const take = (piece: Buffer) => {
    length += piece.length;
    if (length > maxBytes) {
      tooLong = true;
      pieces = [];
    } else if (piece.length > 0) {
      pieces.push(piece);
    }
  };
  const finish = (): InputLine => {
    number += 1;
    const text = tooLong ? undefined : Buffer.concat(pieces, length).toString('utf8');
    pieces = [];
    length = 0;
    tooLong = false;
    return { number, text, end };
  };

  for await (const chunk of input) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    let start = 0;
    for (let newline = bytes.indexOf(NEWLINE); newline !== -1; newline = bytes.indexOf(NEWLINE, start)) {
      take(bytes.subarray(start, newline));
      end += newline + 1 - start;
      start = newline + 1;
      yield finish();
    }
    take(bytes.subarray(start));
    end += bytes.length - start;
  }
  if (length > 0 || tooLong) yield finish();
}
