import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The disk's own floor for a durable answer: how long a 4 KiB write and
 * fsync take, `samples` times, in the folder where the benchmark keeps its
 * stores. A durable commit waits for at least one, so a lone request can
 * never be answered faster than this, whatever the service does.
 */
export function fsyncTimesMs(samples: number): number[] {
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-bench-fsync-'));
  const fd = openSync(join(dir, 'probe'), 'w');
  try {
    const page = Buffer.alloc(4096, 1);
    const times: number[] = [];
    for (let i = 0; i < samples; i++) {
      const started = process.hrtime.bigint();
      writeSync(fd, page, 0, page.length, (i % 16) * page.length);
      fsyncSync(fd);
      times.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
    return times;
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}
