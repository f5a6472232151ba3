import { Writable } from 'node:stream';
import { main } from '../../src/cli/main.js';
import type { CliResult } from './processes.js';

/** Runs a command line through `main()` in this process, as `bin/plantstore` would, without the start-up of a child process. */
export async function runMain(args: readonly string[], env: Record<string, string>): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const sink = (append: (text: string) => void) =>
    new Writable({
      write(chunk: Buffer | string, _encoding, done) {
        append(chunk.toString());
        done();
      },
    });
  const code = await main(args, {
    env,
    stdout: sink((text) => (stdout += text)),
    stderr: sink((text) => (stderr += text)),
    nodeVersion: process.versions.node,
  });
  return { code, stdout, stderr };
}
