import { Readable, Writable } from 'node:stream';
import { main } from '../../src/cli/main.js';
import type { CliResult } from './processes.js';

/** A stream that keeps what is written to it, as text. */
class Collected extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

/**
 * Runs `plantstore ARGS` in this process, through the same `main()` that
 * bin/plantstore calls, with `env` as its whole environment and `stdin` as
 * its input (none by default), on `nodeVersion` as the Node.js it reports: for commands that neither listen nor wait for
 * a signal, many times faster than a child process.
 */
export async function runMain(args: readonly string[], env: Record<string, string> = {}, stdin: string = '', nodeVersion = process.versions.node): Promise<CliResult> {
  const stdout = new Collected();
  const stderr = new Collected();
  const code = await main(args, { env, stdin: Readable.from([Buffer.from(stdin)]), stdout, stderr, nodeVersion });
  return { code, stdout: stdout.text, stderr: stderr.text };
}
